package io.statesnap.evolution

import io.statesnap.StatesnapErrors

import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Expression}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType

/** One of the session settings a SQL rule's value can depend on, by its key in a definition and its Spark conf. */
sealed abstract class SqlSetting(val key: String, val conf: String, val words: String) {
  override def toString: String = key
}

object SqlSetting {
  case object TimeZone extends SqlSetting("timeZone", SQLConf.SESSION_LOCAL_TIMEZONE.key, "time zone")
  case object Ansi extends SqlSetting("ansi", SQLConf.ANSI_ENABLED.key, "ANSI mode")
  case object CaseSensitive extends SqlSetting("caseSensitive", SQLConf.CASE_SENSITIVE.key, "case sensitivity")
  val all: Seq[SqlSetting] = Seq(TimeZone, Ansi, CaseSensitive)

  def byKey(key: String): Option[SqlSetting] = all.find(_.key == key)
  def byConf(conf: String): Option[SqlSetting] = all.find(_.conf == conf)
}

/**
 * The SQL settings a definition's expressions were validated with, pinned into the definition so executors
 * evaluate them exactly the same way, whatever their own session (or thread) says.
 *
 * @param assumed the settings nobody said when they were pinned (an offline tool with neither a record of the
 *   application's settings nor the settings given): their values here are fillers, which a rule may not depend on
 *   ([[StateEvolution]] refuses one that does) and which are never taken for the application's
 */
final case class SqlSettings(ansi: Boolean, timeZone: String, caseSensitive: Boolean,
    assumed: Set[SqlSetting] = Set.empty) {
  /** Runs `body` (analysis, expression construction, evaluation) under these settings. */
  def apply[T](body: => T): T = {
    val conf = new SQLConf
    conf.setConf(SQLConf.ANSI_ENABLED, ansi)
    conf.setConf(SQLConf.SESSION_LOCAL_TIMEZONE, timeZone)
    conf.setConf(SQLConf.CASE_SENSITIVE, caseSensitive)
    SQLConf.withExistingConf(conf)(body)
  }

  /** A cast of `e` to `to` that behaves as these settings say (ANSI: fail on a bad value; else: null). */
  def cast(e: Expression, to: DataType): Expression =
    if (e.dataType == to) e else Cast(e, to, Some(timeZone), EvalMode.fromBoolean(ansi))

  def known: Seq[SqlSetting] = SqlSetting.all.filterNot(assumed)

  /** The value of `setting`, as its Spark conf says it. */
  def valueOf(setting: SqlSetting): String = setting match {
    case SqlSetting.TimeZone => timeZone
    case SqlSetting.Ansi => ansi.toString
    case SqlSetting.CaseSensitive => caseSensitive.toString
  }

  /** These settings with `setting` set to `value` (a value its Spark conf takes), and known. */
  def withValue(setting: SqlSetting, value: String): SqlSettings = {
    def bool = value.trim.toLowerCase match {
      case "true" => true
      case "false" => false
      case _ => throw StatesnapErrors.confTakes(setting.conf, value, "true or false")
    }
    val set = setting match {
      case SqlSetting.TimeZone =>
        // Spark's own check of the conf, so a zone Spark would refuse is refused here too.
        val zone = new SQLConf
        zone.setConfString(SQLConf.SESSION_LOCAL_TIMEZONE.key, value)
        copy(timeZone = zone.sessionLocalTimeZone)
      case SqlSetting.Ansi => copy(ansi = bool)
      case SqlSetting.CaseSensitive => copy(caseSensitive = bool)
    }
    set.copy(assumed = assumed - setting)
  }

  /** The same settings with an assumed `setting` set to other values: a rule that depends on it differs there. */
  private[evolution] def alternatives(setting: SqlSetting): Seq[SqlSettings] = (setting match {
    // Zones far from each other and from UTC, one of them off the hour.
    case SqlSetting.TimeZone => Seq("Pacific/Kiritimati", "America/St_Johns", "UTC").filter(_ != timeZone)
      .map(z => copy(timeZone = z))
    case SqlSetting.Ansi => Seq(copy(ansi = !ansi))
    case SqlSetting.CaseSensitive => Seq(copy(caseSensitive = !caseSensitive))
  }).take(2)

  def describe: String = s"ANSI ${if (ansi) "on" else "off"}, time zone $timeZone, case-${
    if (caseSensitive) "sensitive" else "insensitive"}"
}

object SqlSettings {
  /** What a Scala snapshot class gets (its rules run under them, as documented): Spark 4's defaults. */
  val Default: SqlSettings = SqlSettings(ansi = true, timeZone = "UTC", caseSensitive = false)

  /** Nothing known of the settings (a definition that pinned none): Spark 4's defaults as fillers. */
  val Unknown: SqlSettings = Default.copy(assumed = SqlSetting.all.toSet)

  /** The settings of the session `conf` (the driver's, at registration). */
  def of(conf: SQLConf): SqlSettings =
    SqlSettings(conf.ansiEnabled, conf.sessionLocalTimeZone, conf.caseSensitiveAnalysis)
}
