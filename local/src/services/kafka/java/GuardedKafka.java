// Runs a Kafka node (kafka.Kafka <server.properties>) that dies with its parent: the parent holds
// our stdin open, and when it dies (even by SIGKILL) the pipe closes and we halt. The stock
// kafka.Kafka ignores stdin, so without this a killed test run would leave brokers behind.
// Compiled without Kafka on the classpath (reflection), so a Kafka upgrade needs no recompile.
public class GuardedKafka {
  public static void main(String[] args) throws Exception {
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {}
      } catch (java.io.IOException ignored) {
      }
      Runtime.getRuntime().halt(0);
    }, "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    Class.forName("kafka.Kafka").getMethod("main", String[].class).invoke(null, (Object) args);
  }
}
