"""Kafka's Java client against a local broker, without Spark: a one-file Java program (run
by `java` in source-file mode, no build) that reads a topic's partition 0 from the start with
the client settings it is given and prints what happened.

It tells whether a given kafka-clients version (Kafka 4.1.1's own, or Spark's 3.9.0 or
3.4.1 from their jar folders) logs in to a secured listener, and how it reports a refusal:
the exception's class and message and those of its causes, one line each.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kafkaspark.core.storage.private_file import write_private
from airflow_provider_kafkaspark.spark.jars import find_java

_SOURCE = """\
import java.io.FileReader;
import java.io.Reader;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

public class KafkaProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (Reader in = new FileReader(args[0])) {
            props.load(in);
        }
        String des = "org.apache.kafka.common.serialization.ByteArrayDeserializer";
        props.put("key.deserializer", des);
        props.put("value.deserializer", des);
        props.put("enable.auto.commit", "false");
        int want = Integer.parseInt(args[2]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[3]);
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            TopicPartition tp = new TopicPartition(args[1], 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            // Bounded by the deadline: a refused login throws from poll, a silent one ends here.
            while (got < want && System.currentTimeMillis() < deadline) {
                got += consumer.poll(Duration.ofMillis(500)).count();
            }
        } catch (Exception e) {
            Throwable t = e;
            for (int depth = 0; t != null && depth < 10; depth++, t = t.getCause()) {
                System.out.println("ERROR " + t.getClass().getName() + ": " + t.getMessage());
            }
            System.exit(2);
        }
        System.out.println("RECORDS " + got);
        System.exit(got >= want ? 0 : 1);
    }
}
"""


@dataclass(frozen=True)
class ProbeResult:
    returncode: int
    records: int
    errors: list[str]
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _escape(value: str) -> str:
    """A value as java.util.Properties reads it back (PEM text spans lines)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("=", "\\=")


def java_consume(
    workdir: str | os.PathLike[str],
    classpath: Sequence[Path],
    settings: Mapping[str, str],
    topic: str,
    *,
    expect: int,
    timeout_s: float = 30.0,
    system_properties: Mapping[str, str] | None = None,
) -> ProbeResult:
    """Read `expect` records of `topic` partition 0 with the Java client on `classpath`
    and `settings` (`bootstrap.servers` among them); bounded by `timeout_s` (+ the JVM's
    start, the process is killed at twice that)."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "KafkaProbe.java"
    source.write_text(_SOURCE)
    props = work / "probe.properties"
    # Mode 0600: the settings hold client secrets and keys.
    write_private(props, "".join(f"{k}={_escape(v)}\n" for k, v in settings.items()))
    command = [
        str(find_java()),
        "-Xmx256m",
        *(f"-D{k}={v}" for k, v in (system_properties or {}).items()),
        "-cp",
        os.pathsep.join(str(p) for p in classpath),
        str(source),
        str(props),
        topic,
        str(expect),
        str(int(timeout_s * 1000)),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout_s * 2 + 60, check=False
    )
    records = 0
    errors: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith("RECORDS "):
            records = int(line.split()[1])
        elif line.startswith("ERROR "):
            errors.append(line[len("ERROR ") :])
    return ProbeResult(done.returncode, records, errors, done.stdout + done.stderr)
