package io.statesnap.evolution

import org.json4s._
import org.json4s.jackson.JsonMethods
import org.junit.Assert._
import org.junit.Test

/** A refusal's fix written for where it is printed: a call that pastes into Python, an argument that pastes into sh. */
class FixFormatTest {
  private val problem = RowSchemaEvolution.plan(Rows.schema("id STRING"), Rows.schema("id STRING, region STRING NOT NULL"))
    .problems.head.atVersion(2)

  @Test def theApplicationsFixIsTheWholeRegistrationForItsStateAndCheckpoint(): Unit = {
    assertEquals("declare 'region' nullable, or give it a default (for the entries written before it): " +
      "statesnap.register_snapshot(spark, 'last', statesnap.RowSnapshot(version=2, defaults={'region': \"'<value>'\"}" +
      "), checkpoint=\"/data/it's\")", problem.fixAs(FixFormat.Application(Some("last"), Some("/data/it's"))))
    assertTrue(problem.describe, problem.describe.contains("register_snapshot(spark, '<state>', "))
  }

  @Test def aToolsFixIsItsSnapshotArgumentQuotedForTheShell(): Unit = {
    val fix = problem.fixAs(FixFormat.CommandLine())
    val quoted = fix.substring(fix.indexOf("--snapshot ") + "--snapshot ".length)
    // What sh hands the tool: '...' with each ' written as '\''.
    val argument = quoted.stripPrefix("'").stripSuffix("'").replace("'\\''", "'")
    implicit val formats: Formats = DefaultFormats
    val json = JsonMethods.parse(argument)
    assertEquals(2, (json \ "version").extract[Int])
    assertEquals("'<value>'", (json \ "defaults" \ "region").extract[String])
  }

  /** Registered now for the state: version 2 with a default for `label`, a step to 1 before it, mode FULL. */
  private val declared = DeclaredRegistration(2, Seq(
    EvolutionStep(1, Some(Rows.schema("id STRING, n INT")), Rules(renamed = Map("id" -> "key"))),
    EvolutionStep(2, None, Rules(defaults = Map("label" -> "'none'"), dropped = Set("n")))),
    Some(CompatibilityMode.Full))

  @Test def aFixKeepsTheRulesTheStateIsRegisteredWithSincePastingItReplacesThem(): Unit = {
    assertEquals("declare 'region' nullable, or give it a default (for the entries written before it): " +
      "statesnap.register_snapshot(spark, 'last', statesnap.RowSnapshot(version=2, defaults={'label': \"'none'\", " +
      "'region': \"'<value>'\"}, dropped=['n'], earlier=[statesnap.RowSnapshot(version=1, schema='id STRING,n INT', " +
      "renamed={'id': 'key'})], compatibility='FULL'), checkpoint='/c')",
      problem.fixAs(FixFormat.Application(Some("last"), Some("/c"), Some(declared))))
  }

  @Test def aRuleTheFixAsksForReplacesTheOneDeclaredForTheSameField(): Unit = {
    val asked = problem.fixAs(FixFormat.Application(Some("last"), Some("/c"), Some(declared.copy(steps = Seq(
      EvolutionStep(2, None, Rules(derived = Map("region" -> "upper(id)"), defaults = Map("label" -> "'none'"))))))))
    assertTrue(asked, asked.contains("RowSnapshot(version=2, defaults={'label': \"'none'\", " +
      "'region': \"'<value>'\"}, " +
      "compatibility='FULL')"))
    assertFalse(asked, asked.contains("upper(id)"))
  }

  @Test def aFixForALaterVersionThanTheRegisteredOneIsItsOwnRegistration(): Unit = {
    val later = RowSchemaEvolution.plan(Rows.schema("id STRING"), Rows.schema("id STRING, region STRING NOT NULL"))
      .problems.head.atVersion(3)
    assertEquals(later.fixAs(FixFormat.Application(Some("last"), Some("/c"))),
      later.fixAs(FixFormat.Application(Some("last"), Some("/c"), Some(declared))))
  }

  @Test def aToolsFixKeepsTheRegisteredRulesToo(): Unit = {
    val fix = problem.fixAs(FixFormat.CommandLine(Some(declared)))
    val argument = fix.substring(fix.indexOf("--snapshot ") + "--snapshot ".length).stripPrefix("'").stripSuffix("'")
      .replace("'\\''", "'")
    implicit val formats: Formats = DefaultFormats
    val json = JsonMethods.parse(argument)
    assertEquals("'none'", (json \ "defaults" \ "label").extract[String])
    assertEquals("'<value>'", (json \ "defaults" \ "region").extract[String])
    assertEquals(Seq("n"), (json \ "dropped").extract[Seq[String]])
    assertEquals("key", ((json \ "earlier")(0) \ "renamed" \ "id").extract[String])
    assertEquals("id STRING,n INT", ((json \ "earlier")(0) \ "schema").extract[String])
    assertEquals("FULL", (json \ "compatibility").extract[String])
  }

  /** A key gaining `region` (its SQL unknown) and renaming `user` to `account`, given the previous query too. */
  private val keyChange = SchemaProblem(ProblemAt.Key, ProblemSide.Absent, ProblemSide.Absent, "another key",
    s"stop the query and run ${SchemaProblem.ChangeKey}", rekey = Some(ChangeKeyFix(
      ChangeKeyFix.needing(Seq("region")).keys :+
        ("account" -> "user"), previous = true)))

  @Test def aKeyChangesFixIsOneChangeKeyCallWrittenForWhereItIsPrinted(): Unit = {
    val commandLine = "python -m statesnap change-key '/data/it'\\''s' --app <module:function returning the new " +
      "version's streaming DataFrame> --key 'region=<SQL over the old key and value>' --key 'account=user' " +
      "--previous-app <module:function returning the previous version's streaming DataFrame>"
    assertEquals("stop the query and run statesnap.change_key(\"/data/it's\", <the new version's streaming " +
      "DataFrame>, keys={'region': '<SQL over the old key and value>', 'account': 'user'}, previous=<the previous " +
      s"version's streaming DataFrame>) (from the command line: $commandLine)",
      keyChange.fixAs(FixFormat.Application(Some("last"), Some("/data/it's"))))
    assertEquals(s"stop the query and run $commandLine",
      keyChange.fixAs(FixFormat.CommandLine(checkpoint = Some("/data/it's"))))
    assertEquals("statesnap.change_key('<checkpoint>', <the new version's streaming DataFrame>, no_file_sink=True)",
      FixFormat.Application(None, None).changeKeyCall(ChangeKeyFix(noFileSink = true)))
    assertEquals(" (the old entries have no value of their own for `region`: a constant, or derived from the old " +
      "key and value)", keyChange.rekey.get.gains)
  }

  @Test def aPythonStringLiteralIsWrittenAsReprWritesIt(): Unit = {
    assertEquals("'a'", FixFormat.python("a"))
    assertEquals("\"'a'\"", FixFormat.python("'a'"))
    assertEquals("'\\'a\\' \"b\"'", FixFormat.python("'a' \"b\""))
    assertEquals("'a\\\\b'", FixFormat.python("a\\b"))
  }
}
