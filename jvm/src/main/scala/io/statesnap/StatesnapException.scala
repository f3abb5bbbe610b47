package io.statesnap

/**
 * Every error statesnap raises, in Spark's style: `[ERROR_CLASS] message`. Raised before any state byte is
 * rewritten, so the checkpoint stays readable by the application version that wrote it.
 */
final class StatesnapException(val errorClass: String, val detail: String, cause: Throwable = null)
  extends IllegalStateException(s"[$errorClass] $detail", cause)

object StatesnapException {
  // Where a message ends inside the text Spark and PySpark wrap around it (python/statesnap/_errors.py reads the
  // same way).
  private val InText = """(?s)(\[STATESNAP_[A-Z_]+\] .*?)(?=\n\n|\n? SQLSTATE:|\n\tat |\n=== Streaming Query ===|\z)""".r

  /** The first statesnap message in the text of an exception that carried it through Spark's layers, if any. */
  def inText(text: String): Option[String] = InText.findFirstMatchIn(text).map(_.group(1).trim)

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
  val OfflineMigrationRequired = "STATESNAP_OFFLINE_MIGRATION_REQUIRED"
  val StatefulOperatorsChanged = "STATESNAP_STATEFUL_OPERATORS_CHANGED"
  val InvalidArgument = "STATESNAP_INVALID_ARGUMENT"
  val InternalError = "STATESNAP_INTERNAL_ERROR"
}
