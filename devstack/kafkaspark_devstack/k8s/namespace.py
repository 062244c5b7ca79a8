"""A jobs' namespace on the local cluster as docs/production-kubernetes.md asks one to be:
the RBAC manifests of `docs/kubernetes/` applied, and a kubeconfig for the Airflow side's
service account (a token of it), so that submits, stops and status calls run with the
documented rights, not as the cluster's admin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# In a checkout: the manifests docs/production-kubernetes.md names (the dev stack is installed
# from one).
MANIFESTS = Path(__file__).resolve().parents[3] / "docs" / "kubernetes"
AIRFLOW_ACCOUNT = "kafkaspark-airflow"


def admin_api(kubeconfig: Path) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig))


def prepare_namespace(
    kubeconfig: Path,
    namespace: str,
    manifests: tuple[str, ...] = ("driver-rbac.yaml", "airflow-rbac.yaml"),
) -> None:
    """The namespace with the manifests applied (once: an existing namespace is left as is)."""
    from kubernetes import client, utils

    api = admin_api(kubeconfig)
    core = client.CoreV1Api(api)
    if namespace in [n.metadata.name for n in core.list_namespace().items]:
        return
    core.create_namespace({"metadata": {"name": namespace}})
    for name in manifests:
        utils.create_from_yaml(api, str(MANIFESTS / name), namespace=namespace)


def account_kubeconfig(
    kubeconfig: Path,
    namespace: str,
    target: Path,
    account: str = AIRFLOW_ACCOUNT,
    lifetime_s: int = 7200,
) -> Path:
    """A kubeconfig at `target` (mode 0600) for `account` of `namespace`, from a token the
    API server issues for it, with the admin kubeconfig's cluster entry."""
    import yaml
    from kubernetes import client

    api = admin_api(kubeconfig)
    token = client.CoreV1Api(api).create_namespaced_service_account_token(
        account, namespace, {"spec": {"expirationSeconds": lifetime_s}}
    )
    admin = yaml.safe_load(kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": account, "user": {"token": token.status.token}}],
        "contexts": [
            {
                "name": account,
                "context": {"cluster": "local", "user": account, "namespace": namespace},
            }
        ],
        "current-context": account,
    }
    target.write_text(yaml.safe_dump(config))
    target.chmod(0o600)
    return target
