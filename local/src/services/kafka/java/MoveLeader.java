// Moves the leadership of one partition to another in-sync replica, with no broker going down:
// reorders the partition's replicas so the target comes first (a reassignment to the same replica
// set), then runs a preferred-leader election. What `kafka-reassign-partitions` and
// `kafka-leader-election` do, through the admin client already on the broker's classpath.
//   java -cp <kafka classpath> MoveLeader <bootstrap> <topic> <partition> <targetBrokerId>
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;

public class MoveLeader {
  public static void main(String[] args) throws Exception {
    TopicPartition tp = new TopicPartition(args[1], Integer.parseInt(args[2]));
    int target = Integer.parseInt(args[3]);
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    try (Admin admin = Admin.create(props)) {
      TopicDescription d = admin.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic());
      List<Integer> replicas = new ArrayList<>();
      for (var r : d.partitions().get(tp.partition()).replicas()) replicas.add(r.id());
      if (!replicas.remove(Integer.valueOf(target))) throw new IllegalArgumentException("broker " + target + " holds no replica of " + tp);
      replicas.add(0, target);
      admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(replicas)))).all().get();
      // The reassignment only reorders: it completes at once, then the preferred leader is elected.
      for (int i = 0; i < 50 && !admin.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty(); i++) Thread.sleep(100);
      admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
      System.out.println("LEADER_MOVED " + tp + " " + target);
    }
  }
}
