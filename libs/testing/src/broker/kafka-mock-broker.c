/*
 * Kafka-protocol broker for tests: librdkafka's mock cluster (rdkafka_mock.h, Debian's
 * librdkafka-dev). Speaks the Kafka wire protocol on 127.0.0.1; prints the bootstrap list on
 * one line ("BOOTSTRAP host:port,...") once ready and runs until SIGTERM/SIGINT.
 *
 * usage: kafka-mock-broker [--brokers N] [--partitions P] topic...
 * Topics are created here because the mock refuses the admin API (CreateTopics).
 * It also exits when its parent dies (a killed test runner must not leak brokers).
 * SIGUSR1 takes every broker down (connections dropped, new ones refused) and prints "DOWN";
 * SIGUSR2 brings them back and prints "UP": tests use it to simulate a broker outage.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop = 0;
static volatile sig_atomic_t wanted = 0; /* 1: take brokers down, 2: bring them up */
static void on_signal(int sig) { (void)sig; stop = 1; }
static void on_outage(int sig) { wanted = sig == SIGUSR1 ? 1 : 2; }

int main(int argc, char **argv) {
  int brokers = 1, partitions = 3, i;
  char errstr[512];
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--brokers") && i + 1 < argc) brokers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--partitions") && i + 1 < argc) partitions = atoi(argv[++i]);
    else break;
  }
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "conf: %s\n", errstr);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) { fprintf(stderr, "rd_kafka_new: %s\n", errstr); return 1; }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) { fprintf(stderr, "mock cluster failed\n"); return 1; }
  for (; i < argc; i++) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, argv[i], partitions, 1);
    if (err) { fprintf(stderr, "topic %s: %s\n", argv[i], rd_kafka_err2str(err)); return 1; }
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGUSR1, on_outage);
  signal(SIGUSR2, on_outage);
  pid_t parent = getppid();
  printf("BOOTSTRAP %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  while (!stop && getppid() == parent) {
    if (wanted) {
      int down = wanted == 1, id;
      wanted = 0;
      for (id = 1; id <= brokers; id++) {
        if (down) rd_kafka_mock_broker_set_down(mc, id);
        else rd_kafka_mock_broker_set_up(mc, id);
      }
      printf("%s\n", down ? "DOWN" : "UP");
      fflush(stdout);
    }
    usleep(20 * 1000);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
