package io.statesnap.testkit

import io.statesnap.provider.MigrationProbe

/**
 * The tests' fault injection, through statesnap's [[MigrationProbe]] (conftest names it for the whole test session:
 * `spark.sql.streaming.stateStore.statesnap.test.probe=io.statesnap.testkit.MigrationFaults`); it does nothing unless
 * asked:
 *  - `...statesnap.test.interruptMigrationAfter=N`, with `...interruptMigrationBy=exception|halt|signal`: once a
 *    migration has written N entries, stops it by an exception or by halting the JVM as a crashed executor would, or
 *    (`signal`) only creates the marker file below and lets it go on, so that a test can stop the query while the
 *    migration runs. With `...interruptMigrationOnce=<marker file>` (required for `signal`), only the first migration
 *    to get there (in any JVM) acts, and it creates the marker, so a retried task completes.
 *  - the environment variable `STATESNAP_TEST_CRASH_MIGRATE_AT=<step>`: an offline migrate or repartition halts its
 *    JVM after that step, as a crash would: migrate's `poisoned`, `partition` (after the first entry of the first
 *    partition's rewrite), `schema`, `commit`, `sink`; repartition's `poisoned`, `records`, `store` (after the first
 *    store of the new layout committed), `stores`, `commit`, `sink`, `retired`.
 */
final class MigrationFaults(confs: java.util.Map[String, String]) extends MigrationProbe {
  import MigrationFaults._

  // Read once here: the probe travels to the tasks of an offline migration, the confs stay behind.
  private val after: Option[Long] = Option(confs.get(AfterConf)).map(_.toLong)
  private val by = Option(confs.get(ByConf)).getOrElse("exception")
  private val once = Option(confs.get(OnceConf))
  private val crashAt = sys.env.get(CrashAtEnv)
  require(by != "signal" || once.isDefined, "a signal is a marker file: set interruptMigrationOnce")

  override def entriesWritten(before: Long, now: Long): Unit = {
    after.filter(n => before < n && now >= n && once.forall(firstTime)).foreach { _ =>
      by match {
        case "signal" =>
        case "halt" => Runtime.getRuntime.halt(137)
        case _ => throw new IllegalStateException(s"statesnap test hook: migration interrupted after $now entries")
      }
    }
    if (crashAt.contains("partition") && before < 1 && now >= 1) Runtime.getRuntime.halt(137)
  }

  override def offlineStep(step: String): Unit = if (crashAt.contains(step)) Runtime.getRuntime.halt(137)

  private def firstTime(marker: String): Boolean =
    try { java.nio.file.Files.createFile(java.nio.file.Paths.get(marker)); true } catch {
      case _: java.nio.file.FileAlreadyExistsException => false
    }
}

object MigrationFaults {
  val AfterConf = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter"
  val ByConf = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationBy"
  val OnceConf = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationOnce"
  val CrashAtEnv = "STATESNAP_TEST_CRASH_MIGRATE_AT"
}
