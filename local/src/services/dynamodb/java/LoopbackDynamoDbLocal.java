// Starts DynamoDB Local bound to 127.0.0.1 only (the stock ServerRunner binds every interface
// and has no host flag), then prints the free port Jetty picked, so parallel runs never race for a port.
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    java.lang.reflect.Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server jetty = (Server) field.get(proxy);
    // "-port" must be 1..65535, so the Node side passes a placeholder and we ask Jetty for any free port.
    for (Connector c : jetty.getConnectors()) {
      ((ServerConnector) c).setHost("127.0.0.1");
      ((ServerConnector) c).setPort(0);
    }
    // The parent holds our stdin open; when it dies (even by SIGKILL) the pipe closes and we go too.
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {}
      } catch (java.io.IOException ignored) {
      }
      Runtime.getRuntime().halt(0);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    proxy.start();
    for (Connector c : jetty.getConnectors())
      System.out.println("DYNAMODB_LOCAL_LISTENING 127.0.0.1:" + ((ServerConnector) c).getLocalPort());
    System.out.flush();
    proxy.join();
  }
}
