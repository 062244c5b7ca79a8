#!/bin/bash
# The driver image's entrypoint (pyspark ships no image): `executor` starts a Spark executor
# from the variables Spark sets on its executor pods, as Spark's own image's entrypoint.sh
# does; anything else runs as given. Both under tini, which reaps and forwards signals.
set -e

# Spark (and Hadoop's user lookup) want a passwd entry for the container's user.
if ! getent passwd "$(id -u)" >/dev/null 2>&1 && [ -w /etc/passwd ]; then
    echo "$(id -u):x:$(id -u):$(id -g):${SPARK_USER_NAME:-anonymous uid}:$SPARK_HOME:/bin/false" >>/etc/passwd
fi

SPARK_CLASSPATH="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}${SPARK_HOME}/jars/*"
if [ -n "$SPARK_EXTRA_CLASSPATH" ]; then
    SPARK_CLASSPATH="$SPARK_CLASSPATH:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${HADOOP_CONF_DIR+x}" ]; then
    SPARK_CLASSPATH="$HADOOP_CONF_DIR:$SPARK_CLASSPATH"
fi
if [ -n "${SPARK_CONF_DIR+x}" ]; then
    SPARK_CLASSPATH="$SPARK_CONF_DIR:$SPARK_CLASSPATH"
else
    SPARK_CLASSPATH="$SPARK_HOME/conf:$SPARK_CLASSPATH"
fi
# SPARK_JAVA_OPT_0, _1, ...: the executor's JVM options, in their numeric order.
readarray -t SPARK_EXECUTOR_JAVA_OPTS < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/[^=]*=\(.*\)/\1/')
export PYSPARK_PYTHON PYSPARK_DRIVER_PYTHON

case "$1" in
executor)
    shift
    CMD=(
        "$JAVA_HOME/bin/java"
        "${SPARK_EXECUTOR_JAVA_OPTS[@]}"
        "-Xms$SPARK_EXECUTOR_MEMORY"
        "-Xmx$SPARK_EXECUTOR_MEMORY"
        -cp "$SPARK_CLASSPATH${SPARK_DIST_CLASSPATH:+:$SPARK_DIST_CLASSPATH}"
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
        --driver-url "$SPARK_DRIVER_URL"
        --executor-id "$SPARK_EXECUTOR_ID"
        --cores "$SPARK_EXECUTOR_CORES"
        --app-id "$SPARK_APPLICATION_ID"
        --hostname "$SPARK_EXECUTOR_POD_IP"
        --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
        --podName "$SPARK_EXECUTOR_POD_NAME"
    )
    ;;
driver)
    # Cluster mode: spark-submit on the driver pod, in client mode there.
    shift
    CMD=(
        "$SPARK_HOME/bin/spark-submit"
        --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS"
        --deploy-mode client
        "$@"
    )
    ;;
*)
    CMD=("$@")
    ;;
esac
exec /usr/bin/tini -s -- "${CMD[@]}"
