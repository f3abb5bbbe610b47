package io.statesnap

/**
 * Every error statesnap raises, in Spark's style: `[ERROR_CLASS] message`. Raised before any state byte is
 * rewritten, so the checkpoint stays readable by the application version that wrote it.
 */
final class StatesnapException(val errorClass: String, val detail: String, cause: Throwable = null)
  extends IllegalStateException(s"[$errorClass] $detail", cause)

object StatesnapException {
  val IncompatibleStateSchema = "STATESNAP_INCOMPATIBLE_STATE_SCHEMA"
  val UnreadableSnapshot = "STATESNAP_UNREADABLE_SNAPSHOT"
  val MissingSnapshot = "STATESNAP_MISSING_SNAPSHOT"
  val UnsupportedConfiguration = "STATESNAP_UNSUPPORTED_CONFIGURATION"
  val InvalidSnapshotDefinition = "STATESNAP_INVALID_SNAPSHOT_DEFINITION"
  val StateKindChanged = "STATESNAP_STATE_KIND_CHANGED"
  val MigrationFailed = "STATESNAP_MIGRATION_FAILED"
  val MigrationInterrupted = "STATESNAP_MIGRATION_INTERRUPTED"
  val StateLayoutMismatch = "STATESNAP_STATE_LAYOUT_MISMATCH"
  val UnreadableCheckpointFile = "STATESNAP_UNREADABLE_CHECKPOINT_FILE"
}
