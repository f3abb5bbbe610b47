package io.statesnap.keys

import io.statesnap.evolution.SqlSettings
import io.statesnap.keys.NewQueryOperators.{Aggregation, Deduplication, GroupState}
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, Count, Max, Sum}
import org.apache.spark.sql.types.{DataType, LongType, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * The one decision on a key change ([[KeyChanges]]), each rule by itself: what a new key field gets, what is refused
 * and how the refusal names it. End to end against a control query: tests/test_change_key.py.
 */
class KeyChangesTest {
  private val settings = SqlSettings(ansi = false, timeZone = "UTC", caseSensitive = false)
  private val value = new Sum(AttributeReference("value", LongType)())
  private val functions = Seq(Count(Seq(Literal(1))), value)
  private val buffers = AggregateMerge(functions).bufferSchema

  private def byKey(ddl: String, aggregates: Seq[AggregateFunction] = functions) =
    Aggregation(StructType.fromDDL(ddl), AggregateMerge(aggregates), 2, filtered = false)

  private def decide(oldKey: String, newKey: String, expressions: Map[String, String] = Map.empty) =
    KeyChanges.decide("operator 0", StructType.fromDDL(oldKey), buffers, byKey(newKey), expressions, settings, None)

  private def refusal(decided: Either[String, Option[KeyChange]]): String = decided match {
    case Left(why) => why
    case Right(change) => fail(s"decided $change"); ""
  }

  /** The new key of an entry of `key` and the value (count 3, sum 5), as values. */
  private def newKey(change: KeyChange, key: InternalRow): Seq[Any] =
    change.newRekey()(key, InternalRow(3L, 5L)).toSeq(change.newKey)

  @Test def anUnchangedKeyIsNoChange(): Unit = assertEquals(Right(None), decide("id STRING, n INT", "id STRING, n INT"))

  @Test def aDroppedFieldKeepsTheOthersAndMergesByTheQuerysFunctions(): Unit = {
    val change = decide("id STRING, op STRING", "id STRING").toOption.flatten.get
    assertEquals(Seq(UTF8String.fromString("u1")),
      newKey(change, InternalRow(UTF8String.fromString("u1"), UTF8String.fromString("a"))))
    assertEquals(AggregateMerge(functions), change.merge)
    assertTrue(change.says.mkString, change.says.exists(_.contains("`op` dropped")))
  }

  @Test def aWidenedFieldIsCast(): Unit = {
    val change = decide("bucket INT", "bucket BIGINT").toOption.flatten.get
    assertEquals(Seq(7L), newKey(change, InternalRow(7)))
  }

  @Test def aNarrowingIsRefusedUnlessGiven(): Unit = {
    val why = refusal(decide("bucket BIGINT", "bucket INT"))
    assertTrue(why, why.contains("key field `bucket` INT was BIGINT") && why.contains("CAST(bucket AS INT)"))
    val explicit = decide("bucket BIGINT", "bucket INT", Map("bucket" -> "CAST(bucket AS INT)")).toOption.flatten.get
    assertEquals(Seq(7), newKey(explicit, InternalRow(7L)))
  }

  @Test def aNewFieldTakesTheExpressionGivenOverTheOldKeyAndValue(): Unit = {
    val change = decide("id STRING", "id STRING, region STRING, twice BIGINT",
      Map("region" -> "'eu'", "twice" -> "2 * sum")).toOption.flatten.get
    assertEquals(Seq(UTF8String.fromString("u1"), UTF8String.fromString("eu"), 10L),
      newKey(change, InternalRow(UTF8String.fromString("u1"))))
  }

  @Test def aNewFieldWithoutAnExpressionIsRefusedNamingIt(): Unit = {
    val why = refusal(decide("id STRING", "id STRING, region STRING"))
    assertTrue(why, why.contains("key field `region` STRING is new") && why.contains("keys={'region'"))
  }

  @Test def anExpressionOfAnotherTypeOrForNoFieldIsRefused(): Unit = {
    val typed = refusal(decide("id STRING", "id STRING, n INT", Map("n" -> "'eu'")))
    assertTrue(typed, typed.contains("`'eu'` is STRING: cast it in the expression"))
    val unknown = refusal(decide("id STRING", "id STRING", Map("region" -> "'eu'")))
    assertTrue(unknown, unknown.contains("an expression is given for region, which the new key does not have"))
    val unresolved = refusal(decide("id STRING", "id STRING, n INT", Map("n" -> "nope + 1")))
    assertTrue(unresolved, unresolved.contains("the expression given for key field `n` INT, `nope + 1`"))
  }

  @Test def aggregatesChangedWithTheKeyAreRefusedWithoutThePreviousVersion(): Unit = {
    val more = byKey("id STRING", functions :+ Max(AttributeReference("value", LongType)()))
    val why = refusal(KeyChanges.decide("operator 0", StructType.fromDDL("id STRING, op STRING"), buffers, more,
      Map.empty, settings, None))
    assertTrue(why, why.contains("Fix: give the previous version's query too (previous=, --previous-app)"))
  }

  @Test def eachAggregateKeepsTheBufferOfItsOwnFunctionOrStartsFromItsInitialValue(): Unit = {
    // count(1), sum(value) -> sum(value), max(value), count(1): two bigints each, only the functions tell them apart.
    val max = Max(AttributeReference("value", LongType)())
    val change = KeyChanges.decide("operator 0", StructType.fromDDL("id STRING, op STRING"), buffers,
      byKey("id STRING", Seq(value, max, functions.head)), Map.empty, settings, Some(byKey("id STRING, op STRING")))
      .toOption.flatten.get
    assertEquals(StructType.fromDDL("sum BIGINT, max BIGINT, count BIGINT").map(_.dataType),
      change.newValue.map(_.dataType))
    val converted = change.newConverter().get(InternalRow(3L, 5L))
    assertEquals(Seq(5L, null, 3L), converted.toSeq(change.newValue))
    assertTrue(change.says.mkString, change.says.contains("aggregate `max(value)`: new, starts at the deploy (its " +
      "initial value)") && change.says.contains("aggregate `count(1)`: kept"))
    val unchanged = KeyChanges.decide("operator 0", StructType.fromDDL("id STRING"), buffers, byKey("id STRING"),
      Map.empty, settings, Some(byKey("id STRING")))
    assertEquals("the same key and functions: nothing to change", Right(None), unchanged)
  }

  @Test def aDedupKeepsItsValueUnderTheNewKey(): Unit = {
    val within = Deduplication(StructType.fromDDL("id STRING"), StructType.fromDDL("expiresAtMicros BIGINT"),
      withinWatermark = true)
    val change = KeyChanges.decide("operator 0", StructType.fromDDL("id STRING, op STRING"),
      StructType.fromDDL("expiresAtMicros BIGINT"), within, Map.empty, settings, None).toOption.flatten.get
    assertEquals(LatestExpiry, change.merge)
    val expiry = UnsafeProjection.create(Array[DataType](LongType))
    assertEquals(9L, change.merge.newMerger()(expiry(InternalRow(4L)).copy(), expiry(InternalRow(9L))).getLong(0))
  }

  @Test def groupStatesMeetOnlyWithARegisteredMerge(): Unit = {
    val value = GroupStateSnapshot.wrap(StructType.fromDDL("n BIGINT"), withTimeout = true)
    val why = refusal(KeyChanges.decide("operator 0", StructType.fromDDL("id STRING, op STRING"), value,
      GroupState(StructType.fromDDL("id STRING")), Map.empty, settings, None))
    assertTrue(why, why.contains("`op` meet under one new key") && why.contains("merge={"))
    val merge = GroupStateMerge.of(value, Map("n" -> "a.n + b.n"), settings).toOption.get
    val widened = KeyChanges.decide("operator 0", StructType.fromDDL("id INT"), value,
      GroupState(StructType.fromDDL("id BIGINT")), Map.empty, settings, None)
    assertEquals("a widened key meets no other: no merge needed", NoneMeet, widened.toOption.flatten.get.merge)

    // The states merged by the registered SQL; the latest timeout kept; a group without a state takes the other's.
    val rows = UnsafeProjection.create(value.map(_.dataType).toArray)
    val merged = merge.newMerger()(rows(InternalRow(InternalRow(2L), 100L)).copy(),
      rows(InternalRow(InternalRow(3L), 50L)).copy())
    assertEquals((5L, 100L), (merged.getStruct(0, 1).getLong(0), merged.getLong(1)))
    val removed = merge.newMerger()(rows(InternalRow(null, 300L)).copy(),
      rows(InternalRow(InternalRow(3L), 50L)).copy())
    assertEquals((3L, 300L), (removed.getStruct(0, 1).getLong(0), removed.getLong(1)))
  }
}
