"""One S3 URL for both sides: what the driver hands Spark, and the S3A settings it derives
from the standard AWS variables (never the credentials themselves)."""

from __future__ import annotations

from airflow_provider_kafkaspark.spark.object_storage import (
    ABORTABLE_CHECKPOINT_MANAGER,
    on_s3,
    s3a_conf,
    spark_url,
)

ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDSENTINEL",
    "AWS_SECRET_ACCESS_KEY": "secret-sentinel",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def test_s3_urls_become_s3a_for_spark_and_others_stay() -> None:
    assert spark_url("s3://bucket/cp") == "s3a://bucket/cp"
    assert spark_url("s3a://bucket/cp") == "s3a://bucket/cp"
    assert spark_url("/tmp/cp") == "/tmp/cp"
    assert spark_url("file:///tmp/s3://x") == "file:///tmp/s3://x"
    assert on_s3("s3://b/k") and on_s3("s3a://b/k")
    assert not on_s3("/tmp/s3") and not on_s3(None) and not on_s3("gs://b/k")


def test_no_s3_location_no_settings() -> None:
    assert s3a_conf(ENV, ["/tmp/cp", None]) == {}


def test_endpoint_and_region_from_the_environment_never_the_credentials() -> None:
    conf = s3a_conf(ENV, ["s3a://bucket/cp", "s3://bucket/out", None])
    assert conf == {
        "spark.sql.streaming.checkpointFileManagerClass": ABORTABLE_CHECKPOINT_MANAGER,
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:8333",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
    }
    assert not any("SENTINEL" in v.upper() for v in conf.values())


def test_the_s3_specific_endpoint_wins_and_https_keeps_tls() -> None:
    env = {
        "AWS_ENDPOINT_URL": "http://other:1",
        "AWS_ENDPOINT_URL_S3": "https://s3.example:443",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    conf = s3a_conf(env, ["s3a://b/cp"])
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "https://s3.example:443"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"


def test_aws_itself_needs_no_endpoint_and_keeps_virtual_hosted_requests() -> None:
    conf = s3a_conf({}, ["s3://b/cp"])
    assert conf == {"spark.sql.streaming.checkpointFileManagerClass": ABORTABLE_CHECKPOINT_MANAGER}


def test_the_abortable_manager_only_when_every_location_is_on_s3() -> None:
    """Spark's checkpoint file manager serves a file sink's log too, and the abortable one
    refuses local disk: a checkpoint on S3 with a local parquet sink keeps the default."""
    conf = s3a_conf(ENV, ["s3://bucket/cp", "/tmp/out"])
    assert "spark.sql.streaming.checkpointFileManagerClass" not in conf
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:8333"
