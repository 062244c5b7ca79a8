"""A driver's checkpoint (and parquet output) on S3: one URL for both sides.

The user gives one URL, `s3://bucket/path` or `s3a://bucket/path`. The Python side (control
folder, lease, savepoints) reads it through fsspec's s3fs, which takes both schemes. Spark
reads it through Hadoop's S3A file system, which serves `s3a://` only, so the driver hands
Spark the `s3a://` form of the same location.

Credentials are never written into the spec or a conf file: the driver gets the standard AWS
variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), which S3A's
default credential chain and s3fs both read. A driver whose JVM started before its Python
(YARN's application master) has them from its container's credentials, after its JVM started:
that JVM is handed them as S3A settings in memory (`s3a_credentials_conf`). The endpoint and
the region, which are not secret, are copied into S3A's settings in any case: S3A does not
read `AWS_ENDPOINT_URL` itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlparse

S3_SCHEMES = ("s3://", "s3a://")

# spark-hadoop-cloud's manager writes each checkpoint file in place and aborts the upload on
# failure; the default one writes a temporary file and renames it, and a rename on S3 is a
# copy plus a delete.
ABORTABLE_CHECKPOINT_MANAGER = (
    "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"
)


def on_s3(url: str | None) -> bool:
    return bool(url) and str(url).startswith(S3_SCHEMES)


def spark_url(url: str) -> str:
    """The URL Spark is given for a location: `s3://` becomes `s3a://`, others unchanged."""
    return "s3a://" + url[len("s3://") :] if url.startswith("s3://") else url


def s3a_conf(environ: Mapping[str, str], urls: Iterable[str | None]) -> dict[str, str]:
    """Spark settings for S3A when any of `urls` is on S3 (else none): the endpoint and region
    from the standard AWS variables, path-style requests for a custom endpoint (S3-compatible
    stores rarely serve bucket subdomains), and the abortable checkpoint manager when every
    location is on S3 (Spark uses one manager for all its logs, a file sink's included, and
    this one refuses a file system without abortable streams, such as local disk)."""
    given = [u for u in urls if u]
    if not any(on_s3(u) for u in given):
        return {}
    # S3A's default credential chain reads the AWS variables, then an instance profile.
    conf: dict[str, str] = {}
    if all(on_s3(u) for u in given):
        conf["spark.sql.streaming.checkpointFileManagerClass"] = ABORTABLE_CHECKPOINT_MANAGER
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
            urlparse(endpoint).scheme == "https"
        ).lower()
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    return conf


def s3a_credentials_conf(environ: Mapping[str, str]) -> dict[str, str]:
    """The AWS variables as S3A settings (its default chain reads these before the
    environment), for a JVM that did not inherit this process's environment; none without a
    key. Spark redacts these names in its UI and logs."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return {}
    conf = {"spark.hadoop.fs.s3a.access.key": key, "spark.hadoop.fs.s3a.secret.key": secret}
    if environ.get("AWS_SESSION_TOKEN"):
        conf["spark.hadoop.fs.s3a.session.token"] = environ["AWS_SESSION_TOKEN"]
    return conf
