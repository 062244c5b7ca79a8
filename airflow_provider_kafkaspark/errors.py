"""Typed errors. Each message names the file, port, topic or field at fault and what to do."""

from __future__ import annotations


class KafkaSparkError(Exception):
    """Base class of every error this package raises on purpose."""


class LocalStackError(KafkaSparkError):
    """The local Kafka/Spark stack cannot start or be reached."""


class JavaNotFoundError(LocalStackError):
    """No usable Java runtime."""


class JarsNotFoundError(LocalStackError):
    """The JVM jars resolved by the setup step are missing."""


class PortInUseError(LocalStackError):
    """A port the local stack wants is already taken."""


class BrokerStartError(LocalStackError):
    """A local broker process exited or did not become ready."""


class ObjectStoreStartError(LocalStackError):
    """The local S3-compatible server did not start or answer."""


class InvalidInputError(KafkaSparkError):
    """Input from a person, a DAG or a file is malformed. CLI exit code 2."""


class InvalidArgumentError(InvalidInputError, ValueError):
    """An operator, sensor or function argument is wrong; the message names the parameter.
    Also a ValueError, so callers that caught the ValueError raised before keep working."""


class StorageError(InvalidInputError):
    """A URL has no filesystem, or a path cannot be read or written."""


class StorageNotFoundError(StorageError):
    """A file that was expected is not there."""


class StorageAccessError(StorageError):
    """An object store refused the credentials, or denies the operation: no retry helps until
    someone fixes the credentials or the store's policy."""


class StorageUnavailableError(KafkaSparkError):
    """An object store's endpoint did not answer (refused, timed out, unknown host)."""


class CheckpointError(InvalidInputError):
    """A Spark checkpoint is missing, malformed or inconsistent; the message names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SavepointError(InvalidInputError):
    """A savepoint is missing, incomplete, corrupt or cannot be used as asked."""


class NothingCommittedError(SavepointError):
    """A savepoint of a running query was asked for before its first committed batch: there
    is no consistent state to copy yet."""


class ControlFileError(InvalidInputError):
    """A file of the control folder (lease, stop request, stopped report, progress) is bad."""


class RefusedError(KafkaSparkError):
    """A step refused to act on purpose (a live driver, a blocked restore, a stop that would
    need a forced kill): running it again changes nothing until a person acts."""


class LeaseHeldError(RefusedError):
    """A live driver holds the checkpoint's lease."""


class LeaseLostError(LeaseHeldError):
    """A driver's lease was taken over, removed or rewritten by another since this driver last
    wrote it: the driver must stop, never write it again."""


class KafkaUnavailableError(KafkaSparkError):
    """Kafka did not answer within the chosen timeout."""


class KafkaCoordinatorMovedError(KafkaUnavailableError):
    """A group's coordinator moved away from the broker a client asked: that client asks the
    same broker again (librdkafka's admin client keeps the coordinator it found), a new
    client finds the new one."""


class TopicNotFoundError(InvalidInputError):
    """A topic or partition the caller named does not exist in the Kafka cluster."""


class KafkaAccessError(InvalidInputError):
    """Kafka refused the client's credentials, or its ACLs deny the operation."""


class KafkaAuthenticationError(KafkaAccessError):
    """A broker refused the client's credentials (a SASL login, a TLS certificate), or its
    token endpoint refused the OAuth client: no retry can succeed until someone fixes the
    connection."""


class ConsumerGroupActiveError(InvalidInputError):
    """A consumer group's offsets cannot be changed while the group has active members."""


class KafkaRequestError(KafkaSparkError):
    """Kafka rejected a request for a reason that no more specific error covers."""


class ClusterUnavailableError(KafkaSparkError):
    """A cluster manager (a YARN ResourceManager) did not answer: refused, timed out."""


class NoActiveResourceManagerError(ClusterUnavailableError):
    """None of a job reference's YARN ResourceManagers is active: each was asked once and
    was down, standby or failing. `tried` holds (address, what it said) for each, without
    credentials. Asking again at once would ask the same; a later poll may find a new one."""

    def __init__(self, message: str, tried: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.tried = tried


class ClusterAuthenticationError(InvalidInputError):
    """A cluster manager's REST API (a ResourceManager behind SPNEGO/Kerberos) could not be
    given credentials, or refused them: no ticket, a missing or unreadable keytab, a principal
    the KDC does not know, a 401 this client cannot answer. The message names where the login
    was configured (a connection, or the host's defaults), the address and the mechanism,
    never a secret. No retry can succeed until someone fixes the login."""


class JobNotFoundError(InvalidInputError):
    """A job reference names an application the cluster manager does not know."""


class JobSkippedError(KafkaSparkError):
    """A submit found its job running and was asked to leave it be (if_running='skip')."""


class NoLiveBootstrapError(InvalidInputError):
    """No bootstrap server of a connection answers: the submit fails without retries, as
    Airflow's permanent failures do (a dead or mistyped list does not heal by waiting)."""


class JarsSettingError(JarsNotFoundError, InvalidInputError):
    """The jar setting (`KAFKASPARK_JARS_DIR`, or a folder a caller gave) is unset, names a
    missing folder, or one that lacks an artifact of the connector set; the message names the
    setting, the folder and the artifact's Maven coordinate. Bad input: waiting or retrying
    cannot heal it (a submit fails without retries, a driver exits as a bad job)."""


class DeploymentConflictError(RefusedError):
    """Another deploy holds the deployment (an upgrade or rollback in progress), or changed its
    record since this one read it."""


class DeploymentRefusedError(RefusedError):
    """A deploy refused on purpose: a spec the deployment rolled back from, an upgrade whose
    compatibility check failed or could not run when the policy requires it."""


class UpgradeRolledBackError(RefusedError):
    """An upgrade was unhealthy and the deployment rolled back to its last stable spec."""
