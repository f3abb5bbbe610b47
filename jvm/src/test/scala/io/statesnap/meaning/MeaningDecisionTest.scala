package io.statesnap.meaning

import io.statesnap.evolution.{AggregateStart, Rules, SqlSettings}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.{DoubleType, LongType, StructField, StructType}
import org.junit.Assert._
import org.junit.Test

/**
 * A restart decided by what the plan says a state means: a key by the columns that feed it (names play no part), an
 * aggregation's buffers by the aggregate they belong to (buffer names play no part), and the record of it read back
 * exactly as written.
 */
class MeaningDecisionTest {
  private def key(fields: (String, String)*) = fields.map { case (name, source) => KeyColumn(name, source, "string") }
  private def agg(function: String, buffer: (String, String)*) = MeantAggregate(function, buffer, function)
  private val count = agg("count(1)", "count" -> "bigint")
  private val sum = agg("sum(value)", "sum" -> "bigint")
  private val max = agg("max(value)", "max" -> "bigint")
  private val avg = agg("avg(value)", "sum" -> "double", "count" -> "bigint")

  /** Two windowed counts of a union, told apart by what feeds them alone. */
  private def counted(what: String) = OperatorMeaning("streaming aggregation", key("user" -> "user"), Seq(count),
    Some(s"where (type = '$what')"))
  private val (clicks, views, purchases) = (counted("click"), counted("view"), counted("purchase"))

  @Test def aStateAnotherOperatorOfThePlanComputesHasMoved(): Unit = {
    val recorded = Map(0L -> clicks, 1L -> views)
    assertEquals("unchanged", Nil, MeaningDecision.movedStates(recorded, recorded))
    assertEquals("swapped", Seq(0L -> 1L, 1L -> 0L), MeaningDecision.movedStates(recorded, Map(0L -> views, 1L -> clicks)))
    assertEquals("the first removed, another appended: views' counts would be read as purchases'", Seq(1L -> 0L),
      MeaningDecision.movedStates(recorded, Map(0L -> views, 1L -> purchases)))
    assertEquals("an input that alone changed is still itself", Nil,
      MeaningDecision.movedStates(recorded, Map(0L -> clicks.copy(input = Some("where (type = 'tap')")), 1L -> views)))
    assertEquals("a key renamed is the same key", Seq(1L -> 0L), MeaningDecision.movedStates(recorded,
      Map(0L -> views.copy(key = key("uid" -> "user")), 1L -> purchases)))
    assertEquals("recorded by an earlier statesnap, without its input: nothing to match", Nil,
      MeaningDecision.movedStates(recorded.map { case (id, m) => id -> m.copy(input = None) },
        Map(0L -> views.copy(input = None), 1L -> clicks.copy(input = None))))
    val refusal = MeaningDecision.movedStatesRefusal("file:/ck", Seq(1L -> 0L), recorded, Map(0L -> views, 1L -> purchases))
    assertTrue(refusal.getMessage, refusal.getMessage.startsWith("[STATESNAP_STATEFUL_OPERATORS_CHANGED] the new " +
      "version's stateful operators are not in the places their states are in checkpoint file:/ck: the state of " +
      "operator 1 (streaming aggregation by `user`, aggregates count(1), fed by where (type = 'view')) is computed by " +
      "the new version's operator 0, and the new version's operator 1 is streaming aggregation by `user`, aggregates " +
      "count(1), fed by where (type = 'purchase')."))
  }

  @Test def aKeyFedByOtherColumnsIsARefusalValueAndAKeyRenamedIsTheSameKey(): Unit = {
    val recorded = OperatorMeaning("streaming aggregation", key("user" -> "user"), Seq(count))
    def judged(now: OperatorMeaning) = MeaningDecision.judge(Some(recorded), now, 0L, 3L, "operator 0", "file:/ck")
    val refusal = judged(recorded.copy(key = key("user" -> "region"))).swap.toOption.get
    assertTrue(refusal.getMessage, refusal.getMessage.startsWith("[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the key of " +
      "operator 0 is another key: `user` is now fed by region, not user."))
    assertTrue(refusal.getMessage, refusal.getMessage.contains("change_key"))
    assertTrue(refusal.getMessage, refusal.getMessage.endsWith("or keep the key's columns as they were; or start its " +
      "state anew, its values dropped: statesnap.deploy(checkpoint, query, start, anew=[0]), the query stopped."))
    val renamed = judged(recorded.copy(key = key("uid" -> "user"))).toOption.get
    assertTrue("the stores read the recorded key under the new name", renamed.sameKey)
    assertEquals(3L, renamed.atVersion)
    val unrecorded = MeaningDecision.judge(None, recorded, 0L, 3L, "operator 0", "file:/ck").toOption.get
    assertTrue("a meaning first seen is recorded", unrecorded.record && !unrecorded.sameKey)
  }

  @Test def aMeaningReadsBackWithItsInputOrWithoutOne(): Unit = {
    assertEquals(clicks, OperatorMeaning.parse(clicks.toJson))
    val earlier = clicks.copy(input = None)
    assertEquals(earlier, OperatorMeaning.parse(earlier.toJson.replace(",\"input\":null", "")))
    val named = clicks.copy(name = Some("clicks"))
    assertEquals(named, OperatorMeaning.parse(named.toJson))
    assertEquals("an operator the user did not name is recorded as before", org.json4s.JNothing,
      org.json4s.jackson.JsonMethods.parse(clicks.toJson) \ "name")
  }

  @Test def aKeyIsTheColumnsThatFeedItUnderAnyName(): Unit = {
    assertEquals(None, MeaningDecision.keyChange(key("user" -> "user"), key("uid" -> "user")))
    assertEquals(Some("`user` is now fed by region, not user"),
      MeaningDecision.keyChange(key("user" -> "user"), key("user" -> "region")))
    assertTrue(MeaningDecision.keyChange(key("a" -> "a", "b" -> "b"), key("b" -> "b", "a" -> "a")).get
      .startsWith("its columns are reordered"))
    assertEquals(Seq(KeyColumn("region", "region", "string")),
      KeySources(key("user" -> "user"), key("region" -> "region")).gained)
  }

  @Test def buffersFollowTheirAggregateWhateverTheyAreNamed(): Unit = {
    val m = AggregateMatch(Seq(count, sum), Seq(count, max, avg, sum))
    assertEquals(Seq(Some(0), None, None, Some(1)), m.kept)
    assertFalse(m.unchanged)
    val removed = AggregateMatch(Seq(count, max, avg, sum), Seq(count, sum))
    assertEquals(Seq(Some(0), Some(3)), removed.kept)
    assertEquals(Seq(max, avg), removed.dropped)
    // max(a) replaced by max(b): another aggregate, which starts anew; a sum widened is the same one retyped.
    assertEquals(Seq(None), AggregateMatch(Seq(max), Seq(agg("max(other)", "max" -> "bigint"))).kept)
    val widened = MeantAggregate("sum(CAST(value AS DECIMAL(20,2)))", Seq("sum" -> "decimal(30,2)",
      "isEmpty" -> "boolean"), "sum(value)")
    assertEquals(Seq(widened), AggregateMatch(Seq(sum), Seq(widened)).retyped)
    assertTrue(AggregateMatch(Seq(count, sum), Seq(count, sum)).unchanged)
  }

  @Test def thePlanCopiesEachKeptSliceAndStartsTheNewOnes(): Unit = {
    val old = StructType(Seq(StructField("count", LongType), StructField("sum", LongType)))
    val neu = StructType(Seq(StructField("count", LongType), StructField("max", LongType),
      StructField("sum", DoubleType), StructField("count", LongType), StructField("sum", LongType)))
    val starts = Seq(AggregateStart("count(1)", Seq("count" -> "0L")), AggregateStart("max(value)",
      Seq("max" -> "CAST(NULL AS BIGINT)")), AggregateStart("avg(value)", Seq("sum" -> "0.0D", "count" -> "0L")),
      AggregateStart("sum(value)", Seq("sum" -> "CAST(NULL AS BIGINT)")))
    val plan = AggregateMatch(Seq(count, sum), Seq(count, max, avg, sum)).plan(old, neu, starts, SqlSettings.Default)
      .fold(why => throw new AssertionError(why), identity)
    val row = UnsafeProjection.create(old)(InternalRow(3L, 11L))
    val migrated = plan.migration.migrate(row)
    assertEquals(Seq[Any](3L, null, 0.0, 0L, 11L), (0 until 5).map(i => migrated.get(i, neu(i).dataType)))
    assertTrue(AggregateMatch(Seq(count, sum), Seq(count, max, avg, sum)).plan(neu, neu, starts, SqlSettings.Default)
      .isLeft)
  }

  @Test def anAggregateReplacedUnderItsColumnIsTheUsersToRoute(): Unit = {
    def as(a: MeantAggregate, columns: String*) = a.copy(outputs = Some(columns))
    val (n, euCount, total) = (as(count, "n"), as(agg("count(eu)", "count" -> "bigint"), "n"), as(sum, "total"))
    val replaced = AggregateMatch(Seq(n, total), Seq(euCount, total))
    assertEquals(Seq(0 -> 0), replaced.replaced)
    // Another column, or a meaning recorded before its columns: removed beside added, as before.
    assertEquals(Nil, AggregateMatch(Seq(n, total), Seq(as(euCount, "eu_n"), total)).replaced)
    assertEquals(Nil, AggregateMatch(Seq(count, total), Seq(euCount, total)).replaced)
    val problem = replaced.routed(Rules(), 2).left.toOption.get.head
    assertEquals("n", problem.fieldPath)
    val fix = problem.describe
    assertTrue(fix, fix.contains("RowSnapshot(version=2, renamed={'n': 'n'})") &&
      fix.contains("RowSnapshot(version=2, dropped=['n'])"))
    assertEquals(Seq(Some(0), Some(1)), replaced.routed(Rules(renamed = Map("n" -> "n")), 2).toOption.get.kept)
    assertEquals(Seq(None, Some(1)), replaced.routed(Rules(dropped = Set("n")), 2).toOption.get.kept)
    // A sum in the place of a count cannot go on from it: the only fix starts it.
    val mean = AggregateMatch(Seq(n, total), Seq(as(avg, "n"), total))
    val started = mean.routed(Rules(), 2).left.toOption.get.head.describe
    assertTrue(started, !started.contains("renamed") && started.contains("dropped=['n']"))
    assertTrue(mean.routed(Rules(renamed = Map("n" -> "n")), 2).isLeft)
    assertTrue("a rename of no replaced column", replaced.routed(Rules(renamed = Map("m" -> "n")), 2).isLeft)
    // A registered start, by the column of an aggregate that keeps one buffer or by buffer name.
    val starts = Seq(AggregateStart("count(eu)", Seq("count" -> "0"), Seq("n")),
      AggregateStart("avg(value)", Seq("sum" -> "0.0", "count" -> "0"), Seq("mean")))
    assertEquals(Seq(Seq("count" -> "5"), Seq("sum" -> "0.0", "count" -> "0")),
      replaced.started(starts, Map("n" -> "5", "mean" -> "1")).map(_.buffers))
    assertEquals(Seq(Seq("count" -> "7"), Seq("sum" -> "0.0", "count" -> "7")),
      replaced.started(starts, Map("count" -> "7")).map(_.buffers))
  }

  @Test def aMeaningReadsBackAsWrittenAndANewerFormatIsRefused(): Unit = {
    val meaning = OperatorMeaning("streaming aggregation", Seq(KeyColumn("uid", "user", "string")),
      Seq(count.copy(outputs = Some(Seq("n"))), avg))
    assertEquals(meaning, OperatorMeaning.parse(meaning.toJson))
    val planned = PlannedOperator(3, meaning, record = true, sameKey = true,
      Some(AggregateMatch(Seq(count), meaning.aggregates)))
    assertEquals(planned, PlannedOperator.fromJValue(org.json4s.jackson.JsonMethods.parse(
      org.json4s.jackson.JsonMethods.compact(planned.toJValue))))
    val newer = meaning.toJson.replace("\"format\":1", "\"format\":2")
    val e = assertThrows(classOf[IllegalArgumentException], () => OperatorMeaning.parse(newer))
    assertTrue(e.getMessage, e.getMessage.contains("a newer statesnap wrote it"))
    assertEquals("streaming aggregation by `uid` (from user), aggregates count(1), avg(value)", meaning.describe)
  }
}
