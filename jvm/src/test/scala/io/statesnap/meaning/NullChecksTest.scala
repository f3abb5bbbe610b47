package io.statesnap.meaning

import org.junit.Assert._
import org.junit.Test

/**
 * What feeds an operator compared without the null checks Spark's optimizer infers and pushes below it: a meaning
 * recorded with them (by a statesnap that kept them) reads as the plan now says it, whatever else its filters hold.
 */
class NullChecksTest {
  private val join = "stream-stream inner join by `left id` (from id), `right rid` (from id)"

  @Test def aFilterOfNullChecksAloneIsLeftOut(): Unit = {
    assertEquals("", NullChecks.removed("where (id IS NOT NULL) <- where (id IS NOT NULL)"))
    assertEquals(join, NullChecks.removed(s"$join <- where (timestamp_seconds(value) IS NOT NULL) <- where " +
      "(id IS NOT NULL) <- where ((id IS NOT NULL) AND (rid IS NOT NULL))"))
  }

  @Test def theOtherConditionsOfAFilterAreKeptInTheirOrderAsSparkNestsThem(): Unit = {
    assertEquals("where (op = 'click')",
      NullChecks.removed("where ((timestamp_seconds(value) IS NOT NULL) AND (op = 'click'))"))
    assertEquals("where ((b > 1) AND (c < 2))",
      NullChecks.removed("where (((a IS NOT NULL) AND (b > 1)) AND ((c < 2) AND (d IS NOT NULL)))"))
    assertEquals("where ((a IS NULL) OR (b IS NOT NULL))",
      NullChecks.removed("where ((a IS NULL) OR (b IS NOT NULL))"))
  }

  @Test def aUnionsBranchesAreEachReadTheSameWay(): Unit =
    assertEquals("union(where (op = 'a'); where (op = 'b') <- dropDuplicates by `id`)", NullChecks.removed(
      "union(where ((t IS NOT NULL) AND (op = 'a')); where (op = 'b') <- where (t IS NOT NULL) <- dropDuplicates " +
        "by `id`)"))

  @Test def quotedTextIsTakenAsItIs(): Unit = Seq(
    "where (op = 'x IS NOT NULL)')", "where (op = 'a AND b')", "where (op = 'it\\'s (x IS NOT NULL)')",
    "where (`a AND b` = 1)", "where (op = 'a <- b')"
  ).foreach(input => assertEquals(input, NullChecks.removed(input)))

  @Test def whatThePlanWritesNowIsReadAsItIs(): Unit = Seq(
    "", "where (op = 'click')", s"$join <- where (op = 'view')", "union(where (op = 'a'); where (op = 'b'))"
  ).foreach(input => assertEquals(input, NullChecks.removed(input)))

  @Test def anOperatorRecordedWithItsNullChecksIsTheOneThePlanComputes(): Unit = {
    val key = Seq(KeyColumn("id", "id", "string"))
    val recorded = OperatorMeaning("dropDuplicates", key, Nil, Some("where ((id IS NOT NULL) AND (op = 'click'))"))
    assertTrue(OperatorMeaning("dropDuplicates", key, Nil, Some("where (op = 'click')")).computesAs(recorded))
    assertFalse(OperatorMeaning("dropDuplicates", key, Nil, Some("where (op = 'view')")).computesAs(recorded))
  }
}
