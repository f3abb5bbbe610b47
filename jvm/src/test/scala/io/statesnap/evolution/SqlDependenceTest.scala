package io.statesnap.evolution

import io.statesnap.evolution.Rows._
import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** A rule may not depend on a setting nobody said: the decision refuses it, naming the rule, setting and fix. */
class SqlDependenceTest {
  private val old = schema("ts TIMESTAMP, n INT, Label STRING")

  private def resolve(to: StructType, rules: Rules, sql: SqlSettings): SchemaCompatibility =
    StateEvolution.resolve(RecordedSchema(1, old), Nil, Declaration(to, 2, Seq(EvolutionStep(2, None, rules)), sql),
      CompatibilityMode.Default)

  /** The settings a rule's value depends on, when none is known (empty: the rule migrates). */
  private def dependsOn(field: String, rules: Rules): Seq[String] = {
    val to = schema(s"ts TIMESTAMP, n INT, Label STRING, $field")
    resolve(to, rules, SqlSettings.Unknown) match {
      case Incompatible(problems) => SqlSetting.all.map(_.conf).filter(c => problems.exists(_.reason.contains(c)))
      case _: CompatibleAfterMigration => Nil
      case other => fail(s"expected a migration or a refusal, got $other"); Nil
    }
  }

  @Test def aRuleOfTheRowAloneMigratesWithNoSettingKnown(): Unit = {
    assertEquals(Nil, dependsOn("tag STRING", Rules(defaults = Map("tag" -> "'none'"))))
    assertEquals(Nil, dependsOn("big BIGINT", Rules(derived = Map("big" -> "CAST(n AS BIGINT)"))))
    assertEquals(Nil, dependsOn("big BIGINT", Rules(derived = Map("big" -> "n"))))
    assertEquals(Nil, dependsOn("zero BIGINT", Rules(defaults = Map("zero" -> "0"))))
  }

  @Test def eachSettingARuleDependsOnIsNamed(): Unit = {
    assertEquals(Seq("spark.sql.session.timeZone"), dependsOn("day DATE", Rules(derived = Map("day" -> "CAST(ts AS DATE)"))))
    assertEquals(Seq("spark.sql.session.timeZone"),
      dependsOn("at TIMESTAMP", Rules(defaults = Map("at" -> "TIMESTAMP'2026-01-01 00:00:00'"))))
    assertEquals(Seq("spark.sql.ansi.enabled"), dependsOn("m INT", Rules(derived = Map("m" -> "n * 1000"))))
    assertEquals(Seq("spark.sql.caseSensitive"), dependsOn("l STRING", Rules(derived = Map("l" -> "upper(label)"))))
  }

  @Test def theRefusalNamesTheRuleAndHowToGiveTheSetting(): Unit = {
    val to = schema("ts TIMESTAMP, n INT, Label STRING, day DATE")
    val rules = Rules(derived = Map("day" -> "CAST(ts AS DATE)"))
    val Incompatible(Seq(p)) = resolve(to, rules, SqlSettings.Unknown)
    assertEquals("day", p.fieldPath)
    assertTrue(p.reason, p.reason.contains("derived['day'] `CAST(ts AS DATE)`"))
    assertTrue(p.describe, p.describe.contains("--sql-conf spark.sql.session.timeZone=<its value>"))
  }

  @Test def aKnownSettingLetsTheRuleMigrateUnderIt(): Unit = {
    val to = schema("ts TIMESTAMP, n INT, Label STRING, day DATE")
    val rules = Rules(derived = Map("day" -> "CAST(ts AS DATE)"))
    val known = SqlSettings.Unknown.withValue(SqlSetting.TimeZone, "America/Los_Angeles")
    assertTrue(resolve(to, rules, known).isInstanceOf[CompatibleAfterMigration])
    // Online, every setting is the registering session's: nothing is assumed.
    assertTrue(resolve(to, rules, SqlSettings.Default).isInstanceOf[CompatibleAfterMigration])
  }

  @Test def aZoneSparkRefusesIsRefused(): Unit = {
    val e = assertThrows(classOf[IllegalArgumentException],
      () => SqlSettings.Unknown.withValue(SqlSetting.TimeZone, "Mars/Olympus"))
    assertTrue(e.getMessage, e.getMessage.contains("Mars/Olympus"))
  }
}
