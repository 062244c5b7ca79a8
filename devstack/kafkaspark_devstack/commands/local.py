"""`kafkaspark local kafka|s3|yarn|jars` (and `postgres|airflow` from `local_airflow`, `k8s`
from `local_k8s`): the local stack of real parts.

A Kafka or S3 folder keeps its server's ports (and a cluster's size) from its first start:
a later `start` without `--port` or `--brokers` starts it as it was, and one that asks for
other values is refused (`start_setting`) rather than served where the folder says."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.commands.flags import with_example
from airflow_provider_kafkaspark.commands.output import EXIT_FINDINGS, EXIT_OK, server_status
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.versions import SPARK_LINES
from kafkaspark_devstack.commands.local_airflow import add_parsers as add_airflow_parsers
from kafkaspark_devstack.commands.local_k8s import add_parsers as add_k8s_parsers

if TYPE_CHECKING:
    from kafkaspark_devstack.s3 import LocalS3Server

DEFAULT_LOCAL_KAFKA_DIR = Path(".local") / "kafka"
DEFAULT_LOCAL_KAFKA_PORT = 9092
DEFAULT_LOCAL_S3_DIR = Path(".local") / "s3"
DEFAULT_LOCAL_S3_PORT = 8333
DEFAULT_LOCAL_YARN_DIR = Path(".local") / "yarn"


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    local = groups.add_parser(
        "local",
        help="the local stack: Kafka, S3 store, YARN, Kubernetes, PostgreSQL, Airflow, JVM jars",
    )
    parts = local.add_subparsers(dest="part", required=True)

    kafka = parts.add_parser("kafka", help="a local Kafka cluster in KRaft mode")
    kafka.add_argument("action", choices=["start", "stop", "status", "kill", "restart"])
    kafka.add_argument("--dir", default=str(DEFAULT_LOCAL_KAFKA_DIR), help="cluster folder")
    # default=None tells a value given from none: a kept cluster refuses other values.
    kafka.add_argument(
        "--brokers",
        type=int,
        default=None,
        help="start: nodes of a new cluster (default 1); a kept cluster has its own",
    )
    kafka.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"start: first listener port of a new cluster (default {DEFAULT_LOCAL_KAFKA_PORT}, "
        f"0: free ports; controllers at port+100); a kept cluster has its own",
    )
    kafka.add_argument("--node", type=int, default=1, help="node id for kill/restart")
    kafka.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for start")
    kafka.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="start: a topic to create once the cluster is up, unless it exists (default 3 "
        "partitions, replicated on up to 3 brokers)",
    )
    with_example(
        kafka,
        "kafkaspark local kafka start --brokers 3",
        "kafkaspark local kafka start --topic ip_count_source:3 --topic ip_count_sink",
        "kafkaspark local kafka status",
    )
    kafka.set_defaults(func=local_kafka)

    s3 = parts.add_parser("s3", help="a local S3-compatible object store (SeaweedFS)")
    s3.add_argument(
        "action",
        choices=["start", "stop", "status", "env"],
        help="env: the AWS variables and an `aws` connection for this server, as shell lines",
    )
    s3.add_argument("--dir", default=str(DEFAULT_LOCAL_S3_DIR), help="server folder")
    s3.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"start: S3 port of a new server (default {DEFAULT_LOCAL_S3_PORT}, 0: a free one); "
        f"a kept server has its own",
    )
    s3.add_argument("--bucket", action="append", default=[], help="bucket to create on start")
    s3.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for start")
    s3.add_argument(
        "--conn-id", default="local_s3", help="env: the `aws` connection's id (AIRFLOW_CONN_...)"
    )
    s3.add_argument(
        "--show-secret",
        action="store_true",
        help="env: print the secret key (masked otherwise)",
    )
    with_example(
        s3,
        "kafkaspark local s3 start --bucket checkpoints",
        "kafkaspark local s3 status",
        'eval "$(kafkaspark local s3 env --show-secret)"',
    )
    s3.set_defaults(func=local_s3)

    yarn = parts.add_parser(
        "yarn", help="a local YARN cluster (one ResourceManager and NodeManager)"
    )
    yarn.add_argument(
        "action",
        choices=["start", "stop", "status", "restart-rm"],
        help="restart-rm: the ResourceManager crashes (SIGKILL) and starts again, recovering "
        "its applications (work-preserving: their containers go on)",
    )
    yarn.add_argument("--dir", default=str(DEFAULT_LOCAL_YARN_DIR), help="cluster folder")
    yarn.add_argument("--port", type=int, default=8032, help="ResourceManager client port")
    yarn.add_argument("--web-port", type=int, default=8088, help="ResourceManager REST/UI port")
    yarn.add_argument("--memory-mb", type=int, default=6144, help="NodeManager memory")
    yarn.add_argument("--vcores", type=int, default=4, help="NodeManager virtual cores")
    yarn.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for start")
    yarn.add_argument(
        "--role",
        choices=["both", "resourcemanager", "nodemanager", "client"],
        default="both",
        help="this host's part on the multi-host bed (default: both daemons here)",
    )
    yarn.add_argument(
        "--resource-manager", default=None, help="the ResourceManager's host (other roles)"
    )
    yarn.add_argument(
        "--staging-dir", default=None, help="an s3a:// folder where spark-submit stages jobs"
    )
    yarn.add_argument(
        "--node-python", default=None, help="where the containers' Python goes (one path on all)"
    )
    with_example(yarn, "kafkaspark local yarn start", "kafkaspark local yarn status")
    yarn.set_defaults(func=local_yarn)
    add_airflow_parsers(parts)
    add_k8s_parsers(parts)

    jars = parts.add_parser("jars", help="JVM jars resolved from Maven Central")
    jars.add_argument(
        "action",
        choices=["resolve", "archive"],
        help="resolve: fetch the jars; archive: build the class archives that make local "
        "Spark drivers and Kafka brokers start faster under KAFKASPARK_FAST_JVM=1",
    )
    jars.add_argument("--dir", default=None, help="jar cache folder (default .cache/jars)")
    jars.add_argument(
        "--with",
        dest="extra",
        action="append",
        default=[],
        choices=["yarn"],
        help="also resolve an optional bundle: yarn (the local YARN cluster's daemons)",
    )
    jars.add_argument(
        "--spark",
        dest="spark_versions",
        action="append",
        default=[],
        choices=sorted(SPARK_LINES),
        help="also resolve the Kafka connector and S3A jars of this Spark release (a driver "
        "environment with its pyspark)",
    )
    with_example(
        jars,
        "kafkaspark local jars resolve",
        "kafkaspark local jars resolve --with yarn",
        "kafkaspark local jars resolve --spark 3.5.7",
        "kafkaspark local jars archive",
    )
    jars.set_defaults(func=local_jars)
    for part in parts.choices.values():
        part.set_defaults(func=_with_jar_default(part.get_default("func")))


def _with_jar_default(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """`command` run with `$KAFKASPARK_JARS_DIR` set to the dev stack's jar cache unless it
    is set: the servers and drivers the local stack starts inherit it (production code
    reads the jars from that setting only)."""

    def run(args: argparse.Namespace) -> int:
        from kafkaspark_devstack.jars import use_default_jars_dir

        use_default_jars_dir()
        return command(args)

    return run


def start_setting(
    flag: str,
    asked: int | None,
    kept: int | None,
    default: int,
    *,
    where: str,
    anything: int | None = None,
) -> int:
    """The value of `flag` a `start` uses: for a new folder (`kept` None) the one `asked`,
    else `default`; for a kept one its own, which `asked` may repeat (or ask for `anything`,
    as `--port 0` asks for any free port). Another value is refused: the folder's server
    has its ports in its state and its data in its folder, and starting it elsewhere than
    asked would leave the caller talking to a port nothing serves. `where` names the folder
    and its state file."""
    if kept is None:
        return default if asked is None else asked
    if asked is None or asked == kept or (anything is not None and asked == anything):
        return kept
    raise InvalidArgumentError(
        f"{flag} {asked}: {where} has {flag} {kept}; leave out {flag} to start it as it is, "
        f"or give another --dir for a new one with {flag} {asked}"
    )


DEFAULT_TOPIC_PARTITIONS = 3


def topic_setting(value: str) -> tuple[str, int]:
    """`--topic NAME[:PARTITIONS]` -> (name, partitions); a one-line error naming the flag."""
    name, _, count = value.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name) or name in (".", ".."):
        raise InvalidArgumentError(
            f"--topic {value[:80]!r}: a topic name is 1-249 of letters, digits, '.', '_', '-'"
        )
    if not count:
        return name, DEFAULT_TOPIC_PARTITIONS
    if not count.isdigit() or int(count) < 1:
        raise InvalidArgumentError(f"--topic {value[:80]!r}: partitions must be a number >= 1")
    return name, int(count)


def local_kafka(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.kafka import STATE_FILE, LocalKafkaCluster

    base = Path(args.dir)
    if args.action == "start":
        topics = [topic_setting(t) for t in args.topic]
        if args.brokers is not None and args.brokers < 1:
            raise InvalidArgumentError(f"--brokers {args.brokers}: 1 or more")
        kept = LocalKafkaCluster.attach(base) if (base / STATE_FILE).is_file() else None
        where = f"the local Kafka cluster in {base.resolve()} ({STATE_FILE})"
        brokers = start_setting(
            "--brokers", args.brokers, None if kept is None else len(kept.nodes), 1, where=where
        )
        port = start_setting(
            "--port",
            args.port,
            None if kept is None else kept.nodes[0].port,
            DEFAULT_LOCAL_KAFKA_PORT,
            where=where,
            anything=0,
        )
        cluster = kept or LocalKafkaCluster(base, brokers=brokers, port=port)
        cluster.start(timeout=args.timeout)
        print(f"Kafka is up: bootstrap.servers={cluster.bootstrap_servers} (data in {base})")
        for name, partitions in topics:
            made = cluster.create_topic(name, partitions)
            print(f"topic {name}: {'created' if made else 'exists'}")
        return EXIT_OK
    cluster = LocalKafkaCluster.attach(base)
    if args.action == "stop":
        cluster.stop()
        print(f"Kafka stopped (data kept in {base})")
    elif args.action == "status":
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return EXIT_OK if all(n["running"] for n in status["nodes"]) else EXIT_FINDINGS
    elif args.action == "kill":
        cluster.kill_broker(args.node)
        print(f"Kafka node {args.node} killed")
    elif args.action == "restart":
        cluster.start_broker(args.node, timeout=args.timeout)
        print(f"Kafka node {args.node} is up at {cluster.node(args.node).address}")
    return EXIT_OK


def local_s3(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.s3 import STATE_FILE, LocalS3Server

    base = Path(args.dir)
    if args.action == "start":
        kept = LocalS3Server.attach(base) if (base / STATE_FILE).is_file() else None
        port = start_setting(
            "--port",
            args.port,
            None if kept is None else kept.port,
            DEFAULT_LOCAL_S3_PORT,
            where=f"the local S3 server in {base.resolve()} ({STATE_FILE})",
            anything=0,
        )
        server = kept or LocalS3Server(base, port=port)
        server.start(timeout=args.timeout)
        for bucket in args.bucket:
            server.create_bucket(bucket)
        # The secret key stays in the state file (mode 0600); a terminal shows where it is.
        print(
            f"S3 is up: endpoint {server.endpoint_url}, access key {server.access_key}, "
            f"secret key in {base / STATE_FILE} (data in {base / 'data'})"
        )
        return EXIT_OK
    server = LocalS3Server.attach(base)
    if args.action == "stop":
        server.stop()
        print(f"S3 stopped (data kept in {base / 'data'})")
        return EXIT_OK
    if args.action == "env":
        if not re.fullmatch(r"[A-Za-z0-9_]+", args.conn_id):
            # Airflow finds AIRFLOW_CONN_<ID upper-cased>: a variable name holds no '-' or '.'.
            raise InvalidArgumentError(
                f"--conn-id {args.conn_id[:60]!r}: letters, digits and '_' only"
            )
        print(s3_env_lines(server, args.conn_id, show_secret=args.show_secret))
        if not args.show_secret:
            # On stderr, so that `eval "$(...)"` of stdout stays valid shell.
            print("# secret key masked: add --show-secret to print it", file=sys.stderr)
        return EXIT_OK
    return server_status(server.status())


SECRET_MASK = "***"


def s3_env_lines(server: LocalS3Server, conn_id: str, *, show_secret: bool) -> str:
    """`export` lines for the standard AWS variables and an `aws` connection of `server`. The
    secret key only when asked for: a terminal's output ends up in scrollback and pastes."""
    from kafkaspark_devstack.s3 import aws_connection_uri

    secret = server.secret_key if show_secret else SECRET_MASK
    variables = {**server.aws_environment(), "AWS_SECRET_ACCESS_KEY": secret}
    uri = aws_connection_uri({**server.aws_connection(), "password": secret})
    name = f"AIRFLOW_CONN_{conn_id.upper()}"
    lines = [f"export {k}={shlex.quote(v)}" for k, v in variables.items()]
    return "\n".join([*lines, f"export {name}={shlex.quote(uri)}"])


def local_jars(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.spark.fast_jvm import KINDS
    from airflow_provider_kafkaspark.spark.jars import connector_bundle, s3a_bundle
    from kafkaspark_devstack.jars import DEFAULT_BUNDLES, resolve_jars
    from kafkaspark_devstack.jvm_archive import build_archive

    jars_dir = Path(args.dir) if args.dir else None
    if args.action == "archive":
        for kind in KINDS:
            print(f"{kind}: {build_archive(kind, jars_dir)}")
        return EXIT_OK
    spark = [b for v in args.spark_versions for b in (connector_bundle(v), s3a_bundle(v))]
    bundles = tuple(dict.fromkeys((*DEFAULT_BUNDLES, *args.extra, *spark)))
    for bundle, folder in resolve_jars(jars_dir, bundles=bundles).items():
        print(f"{bundle}: {folder}")
    return EXIT_OK


YARN_ROLES: dict[str, tuple[str, ...]] = {
    "both": ("resourcemanager", "nodemanager"),
    "resourcemanager": ("resourcemanager",),
    "nodemanager": ("nodemanager",),
    "client": (),
}


def local_yarn(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.yarn import STATE_FILE, LocalYarnCluster

    base = Path(args.dir)
    known = (base / STATE_FILE).is_file()
    if args.action != "start" and not known:
        print(f"no local YARN cluster in {base} (no {STATE_FILE})")
        return EXIT_FINDINGS
    cluster = (
        LocalYarnCluster(base, node_python=args.node_python)
        if known
        else LocalYarnCluster(
            base,
            memory_mb=args.memory_mb,
            vcores=args.vcores,
            rm_client_port=args.port,
            rm_web_port=args.web_port,
            roles=YARN_ROLES[args.role],
            resource_manager=args.resource_manager,
            staging_dir=args.staging_dir,
            node_python=args.node_python,
        )
    )
    if args.action == "start":
        cluster.start(timeout=args.timeout)
        exports = " ".join(f"{k}={v}" for k, v in cluster.client_environment().items())
        print(f"YARN is up: ResourceManager {cluster.web_url}; for spark-submit:")
        print(f"export {exports}")
        return EXIT_OK
    if args.action == "stop":
        cluster.stop()
        print(f"YARN stopped (logs kept in {base / 'logs'})")
        return EXIT_OK
    if args.action == "restart-rm":
        cluster.restart_resource_manager(timeout=args.timeout)
        print(f"ResourceManager restarted: {cluster.web_url}")
        return EXIT_OK
    return server_status(cluster.status())
