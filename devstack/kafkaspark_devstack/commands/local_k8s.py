"""`kafkaspark local k8s build|start|stop|status`: the local Kubernetes cluster (binaries
built with Go from the module proxy, images written offline, one node on a bridge)."""

from __future__ import annotations

import argparse
from pathlib import Path

from airflow_provider_kafkaspark.commands.flags import with_example
from airflow_provider_kafkaspark.commands.output import EXIT_FINDINGS, EXIT_OK, server_status

DEFAULT_LOCAL_K8S_DIR = Path(".local") / "k8s"


def add_parsers(parts: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    k8s = parts.add_parser(
        "k8s", help="a local Kubernetes cluster (root; binaries and images built here)"
    )
    k8s.add_argument(
        "action",
        choices=["build", "start", "stop", "status"],
        help="build: the binaries (Go, about 15 min the first time) and images, cached",
    )
    k8s.add_argument("--dir", default=str(DEFAULT_LOCAL_K8S_DIR), help="cluster folder")
    k8s.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for start")
    k8s.add_argument(
        "--nodes",
        type=int,
        default=1,
        choices=range(1, 9),
        metavar="N",
        help="start: nodes (1-8); each past the first on a host of its own (namespaces)",
    )
    with_example(k8s, "kafkaspark local k8s build", "kafkaspark local k8s start")
    k8s.set_defaults(func=local_k8s)


def local_k8s(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.k8s.build import build, default_cache_dir
    from kafkaspark_devstack.k8s.cluster import STATE_FILE, LocalKubernetesCluster
    from kafkaspark_devstack.k8s.image import driver_image, pause_image

    if args.action == "build":
        cache = default_cache_dir()
        found = build(cache)
        pause = pause_image(cache)
        driver = driver_image(cache)
        print(f"Kubernetes binaries in {found.folder}")
        print(f"images: {pause.name} ({pause.archive}), {driver.name} ({driver.archive})")
        return EXIT_OK
    base = Path(args.dir)
    if args.action != "start" and not (base / STATE_FILE).is_file():
        print(f"no local Kubernetes cluster in {base} (no {STATE_FILE})")
        return EXIT_FINDINGS
    cluster = LocalKubernetesCluster(base)
    if args.action == "start":
        cluster.start(timeout=args.timeout)
        try:
            for number in range(2, args.nodes + 1):
                cluster.add_node(f"kafkaspark-node-{number}", timeout=args.timeout)
        except BaseException:
            cluster.stop()
            raise
        print(f"Kubernetes is up: API server {cluster.server}")
        print(f"kubeconfig:   {cluster.kubeconfig}")
        print(f"bridge:       {cluster.address} (pods reach this host's servers there: start them")
        print(f"              with KAFKASPARK_LOCAL_HOST={cluster.address})")
        print(f"driver image: {cluster.driver_image} (imagePullPolicy: Never)")
        print(f"nodes:        {', '.join(cluster.nodes)}")
        return EXIT_OK
    if args.action == "stop":
        cluster.stop()
        left = cluster.leftovers()
        if left:
            print(f"Kubernetes stopped, but left on this host: {left}")
            return EXIT_FINDINGS
        print(f"Kubernetes stopped (logs kept in {base / 'logs'})")
        return EXIT_OK
    return server_status(cluster.status())
