// Command kfake serves franz-go's kfake, an in-memory implementation of the
// Kafka wire protocol, on fixed loopback ports until it is signalled. It is
// the broker the runtime/idemkafka tests and examples/kafkaconsumer talk to:
// Apache Kafka (a JVM, ZooKeeper or KRaft) cannot be installed on the
// project's machines, and kfake is what franz-go tests its own client
// against. It is not Apache Kafka: see docs/QUEUES.md for what a test
// against it does and does not show.
//
//	go run . -ports 9092,9093,9094
//
// scripts/kafka.sh builds and starts it in the background (make services).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	ports := flag.String("ports", "9092,9093,9094", "comma-separated loopback ports, one broker each")
	partitions := flag.Int("partitions", 6, "partitions of an auto-created topic")
	minSession := flag.Duration("min-session-timeout", time.Second, "smallest consumer group session timeout the brokers accept (Kafka's default is 6s; tests use a few seconds so that a killed consumer's partitions move quickly)")
	flag.Parse()

	var ps []int
	for _, f := range strings.Split(*ports, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p <= 0 || p > 65535 {
			log.Fatalf("kfake: bad port %q in -ports", f)
		}
		ps = append(ps, p)
	}
	c, err := kfake.NewCluster(
		kfake.Ports(ps...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.GroupMinSessionTimeout(*minSession),
	)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	fmt.Printf("kfake listening on %s\n", strings.Join(c.ListenAddrs(), ","))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	c.Close()
}
