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
    val fix = problem.fixAs(FixFormat.CommandLine)
    val quoted = fix.substring(fix.indexOf("--snapshot ") + "--snapshot ".length)
    // What sh hands the tool: '...' with each ' written as '\''.
    val argument = quoted.stripPrefix("'").stripSuffix("'").replace("'\\''", "'")
    implicit val formats: Formats = DefaultFormats
    val json = JsonMethods.parse(argument)
    assertEquals(2, (json \ "version").extract[Int])
    assertEquals("'<value>'", (json \ "defaults" \ "region").extract[String])
  }

  @Test def aPythonStringLiteralIsWrittenAsReprWritesIt(): Unit = {
    assertEquals("'a'", FixFormat.python("a"))
    assertEquals("\"'a'\"", FixFormat.python("'a'"))
    assertEquals("'\\'a\\' \"b\"'", FixFormat.python("'a' \"b\""))
    assertEquals("'a\\\\b'", FixFormat.python("a\\b"))
  }
}
