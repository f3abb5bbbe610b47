package io.statesnap.bridge

import io.statesnap.evolution.{SqlSetting, SqlSettings}
import io.statesnap.snapshot.{DeclarativeRowSnapshot, SnapshotDefinition, StateSnapshotRecord}

/**
 * The SQL settings an offline tool runs a definition's rules under: the application's, which the tool's own
 * session does not know. Each setting is the one given (`--sql-conf`), else the one statesnap recorded with the
 * state (a definition registered online pins its session's; a migrate records what it ran with), else assumed: a
 * filler no rule may depend on, which the decision itself refuses ([[io.statesnap.evolution.SqlDependence]]).
 *
 * @param sources by setting, where its value comes from: `given`, `recorded` or `assumed`
 */
final case class ApplicationSqlSettings(settings: SqlSettings, sources: Map[SqlSetting, String]) {
  /**
   * What a verdict says of them, when `definitionJson` has SQL rules (a `defaults` or `derived` rule's value can
   * depend on the time zone, ANSI mode and case sensitivity). None without SQL rules.
   */
  def note(state: String, definitionJson: Option[String]): Option[String] =
    definitionJson.map(SnapshotDefinition.parse(state, _))
      .filter(_.steps.exists(s => s.rules.defaults.nonEmpty || s.rules.derived.nonEmpty))
      .map(_ => "its SQL rules run with " + SqlSetting.all.map { s =>
        s"${s.conf}=${settings.valueOf(s)} (${sources(s)})"
      }.mkString(", ") + (if (!sources.values.exists(_ == ApplicationSqlSettings.Assumed)) "" else
        "; an assumed setting is not the application's: a rule whose value depends on it is refused"))
}

object ApplicationSqlSettings {
  val Given = "given"
  val Recorded = "recorded with the state"
  val Assumed = "assumed"

  /**
   * @param recorded statesnap's record of the state (or the one made from Spark's files, which records none)
   * @param confs the settings given, as Spark confs (`spark.sql.session.timeZone`, `spark.sql.ansi.enabled`, `spark.sql.caseSensitive`)
   * @throws IllegalArgumentException for any other conf, or a value Spark would not take
   */
  def apply(recorded: StateSnapshotRecord, confs: Map[String, String]): ApplicationSqlSettings = {
    val settings = confs.map { case (conf, value) => SqlSetting.byConf(conf).getOrElse(throw new
      IllegalArgumentException(s"--sql-conf $conf: SQL rules depend on ${SqlSetting.all.map(_.conf).mkString(", ")} " +
      "only; give those the application runs with")) -> value
    }
    // The record's settings as they were pinned: what it only assumed stays assumed.
    val fromRecord = DeclarativeRowSnapshot.userRow(recorded.valueSnapshot).map(_.snapshotDefinition.sql)
      .getOrElse(SqlSettings.Unknown)
    val pinned = settings.foldLeft(fromRecord) { case (s, (setting, value)) => s.withValue(setting, value) }
    ApplicationSqlSettings(pinned, SqlSetting.all.map { s =>
      s -> (if (settings.contains(s)) Given else if (pinned.assumed(s)) Assumed else Recorded)
    }.toMap)
  }
}
