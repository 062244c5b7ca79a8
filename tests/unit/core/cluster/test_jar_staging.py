from airflow_provider_kafkaspark.core.cluster.jar_staging import (
    JarStaging,
    StagedJar,
    cached_jar_url,
    is_local_file,
    jar_entries,
    local_path,
    parse_properties,
    scheme_of,
    shared_staging,
    staging_dir,
)


def test_spark_defaults_lines_are_read_as_spark_reads_them() -> None:
    text = (
        "# a comment\n! another\n\n"
        "spark.yarn.stagingDir   s3a://bucket/staging\n"
        "spark.pyspark.python=/opt/py/bin/python3\n"
        "spark.a : b c\n"
    )
    assert parse_properties(text) == {
        "spark.yarn.stagingDir": "s3a://bucket/staging",
        "spark.pyspark.python": "/opt/py/bin/python3",
        "spark.a": "b c",
    }


def test_the_submits_conf_names_the_staging_folder_before_the_defaults() -> None:
    defaults = "spark.yarn.stagingDir s3a://b/from-defaults\n"
    assert staging_dir({}, defaults) == "s3a://b/from-defaults"
    assert staging_dir({"spark.yarn.stagingDir": "s3a://b/conf"}, defaults) == "s3a://b/conf"
    assert staging_dir({}, "spark.other x\n") is None
    assert staging_dir({"spark.yarn.stagingDir": "  "}, "") is None


def test_schemes_tell_local_jars_from_cluster_ones() -> None:
    assert scheme_of("s3a://b/k.jar") == "s3a"
    assert scheme_of("local:/opt/jars/k.jar") == "local"
    assert scheme_of("/opt/k.jar") == "" and scheme_of("k.jar") == ""
    assert is_local_file("/opt/k.jar") and is_local_file("file:///opt/k.jar")
    assert not is_local_file("local:/opt/k.jar") and not is_local_file("hdfs://nn/k.jar")
    assert local_path("file:///opt/k.jar") == "/opt/k.jar"


def test_only_a_staging_folder_on_a_cluster_filesystem_is_shared() -> None:
    assert shared_staging("s3a://bucket/staging") and shared_staging("hdfs://nn:8020/user/x")
    assert not shared_staging(None)
    assert not shared_staging("file:///tmp/staging") and not shared_staging("/tmp/staging")


def test_a_copy_lives_under_its_contents_digest() -> None:
    digest = "ab" * 32
    url = cached_jar_url("s3a://bucket/staging/", digest, "bundle-2.24.6.jar")
    assert url == "s3a://bucket/staging/kafkaspark-jars/abababababababab/bundle-2.24.6.jar"
    assert jar_entries(" /a.jar, ,local:/b.jar,") == ["/a.jar", "local:/b.jar"]
    assert jar_entries(None) == []


def test_the_description_counts_reused_and_uploaded_megabytes() -> None:
    big = StagedJar("/j/bundle.jar", "s3a://b/s/kafkaspark-jars/x/bundle.jar", 558_001_584)
    small = StagedJar("/j/kafka.jar", "s3a://b/s/kafkaspark-jars/y/kafka.jar", 9_204_801)
    staged = JarStaging("...", uploaded=(small,), reused=(big,))
    assert staged.describe() == (
        "jars staged once per version: 1 reused (558.0 MB), 1 uploaded (9.2 MB)"
    )


def test_only_a_staging_that_named_copies_counts_as_staged() -> None:
    jar = StagedJar("/j/a.jar", "s3a://b/s/kafkaspark-jars/x/a.jar", 10)
    assert not JarStaging("/j/a.jar").staged
    assert JarStaging("s3a://...", reused=(jar,)).staged
    assert JarStaging("s3a://...", uploaded=(jar,)).uploaded_bytes == 10
