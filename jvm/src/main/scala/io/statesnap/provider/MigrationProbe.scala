package io.statesnap.provider

import scala.jdk.CollectionConverters._


/**
 * What a test sees of a migration as it runs, so that it can stop one at any moment as a stop, a kill or a crash
 * would: after every entry written (online and offline), and after each step of an offline migration. statesnap
 * only calls a probe; the tests' (`io.statesnap.testkit.MigrationFaults`) is compiled into the test classes only, and
 * is named by the conf [[MigrationProbe.ClassConf]], which a real query never sets.
 */
trait MigrationProbe extends Serializable {
  /** A migration's count of written entries went from `before` to `now`, before its next write. */
  def entriesWritten(before: Long, now: Long): Unit

  /** An offline tool finished `step` of the batch it appends (migrate's `poisoned`, `schema`, `commit`, `sink`). */
  def offlineStep(step: String): Unit
}

object MigrationProbe {
  val ClassConf = "spark.sql.streaming.stateStore.statesnap.test.probe"

  /**
   * The probe `confs` name, made from them (a public constructor taking the confs as a `java.util.Map`), if they name
   * one: a name that does not make one is an error, never ignored.
   */
  def fromConfs(confs: Map[String, String]): Option[MigrationProbe] = confs.get(ClassConf).map { name =>
    try Class.forName(name, true, Thread.currentThread().getContextClassLoader)
      .getConstructor(classOf[java.util.Map[_, _]]).newInstance(confs.asJava).asInstanceOf[MigrationProbe]
    catch {
      case e: ReflectiveOperationException => throw StoreErrors.noMigrationProbe(ClassConf, name, e)
    }
  }
}
