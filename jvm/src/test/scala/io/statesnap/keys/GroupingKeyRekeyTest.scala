package io.statesnap.keys

import io.statesnap.evolution.SqlSettings
import io.statesnap.keys.NewQueryOperators.TransformWithState
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * A transformWithState grouping key change ([[KeyChanges]] over the grouping key alone) applied to each layout of
 * family that holds it ([[GroupingKeyRekey]]): the grouping key replaced where it sits, the rest kept. End to end
 * against a control query: tests/test_change_grouping_key.py.
 */
class GroupingKeyRekeyTest {
  private val settings = SqlSettings(ansi = false, timeZone = "UTC", caseSensitive = false)
  private val oldGrouping = StructType.fromDDL("id STRING, n INT")
  private def s(text: String) = UTF8String.fromString(text)

  private def change(newKey: String, expressions: Map[String, String]) = KeyChanges.decide("operator 0",
    oldGrouping, new StructType(), TransformWithState(StructType.fromDDL(newKey)), expressions, settings, None)

  /** A column added from the old key, one widened: in `family`'s key at `path`, the row read back as values. */
  private def rekeyed(family: String, path: Seq[Int], row: InternalRow): (StructType, Seq[Any], Seq[Any]) = {
    val rekey = GroupingKeyRekey(StructType.fromDDL(family), path, change("id STRING, n BIGINT, region STRING",
      Map("region" -> "upper(id)")).toOption.flatten.get)
    val old = UnsafeProjection.create(StructType.fromDDL(family))(row)
    val (key, grouping) = rekey.newRekey()(old)
    (rekey.newKeySchema, key.toSeq(rekey.newKeySchema), grouping.toSeq(rekey.change.newKey))
  }

  @Test def aFamilyKeyedByTheGroupingKeyAloneIsTheNewKey(): Unit = {
    val (schema, key, grouping) = rekeyed("id STRING, n INT", Nil, InternalRow(s("u1"), 7))
    assertEquals(StructType.fromDDL("id STRING, n BIGINT, region STRING"), schema)
    assertEquals(Seq(s("u1"), 7L, s("U1")), key)
    assertEquals(key, grouping)
  }

  @Test def aTimerByTimeKeepsItsTimeAndGetsTheNewKeyAfterIt(): Unit = {
    val (schema, key, grouping) = rekeyed("expiryTimestampMs BIGINT, key STRUCT<id: STRING, n: INT>", Seq(1),
      InternalRow(99L, InternalRow(s("u1"), 7)))
    assertEquals("struct<expiryTimestampMs:bigint,key:struct<id:string,n:bigint,region:string>>",
      schema.simpleString)
    assertEquals(99L, key.head)
    assertEquals(Seq(s("u1"), 7L, s("U1")), grouping)
  }

  @Test def aMapsTtlIndexReplacesTheGroupingKeyInsideItsElementKey(): Unit = {
    val (schema, key, grouping) = rekeyed("expirationMs BIGINT, elementKey STRUCT<key: STRUCT<id: STRING, n: INT>, " +
      "userKey: STRUCT<k: STRING>>", Seq(1, 0), InternalRow(5L, InternalRow(InternalRow(s("u2"), 3),
      InternalRow(s("web")))))
    assertEquals("struct<expirationMs:bigint,elementKey:struct<key:struct<id:string,n:bigint,region:string>," +
      "userKey:struct<k:string>>>", schema.simpleString)
    assertEquals(5L, key.head)
    assertEquals(Seq(s("u2"), 3L, s("U2")), grouping)
    val element = key(1).asInstanceOf[InternalRow]
    assertEquals(s("web"), element.getStruct(1, 1).getUTF8String(0))
  }

  @Test def aColumnInsertedInFrontOfAMapsGroupingKeyKeepsItsUserKey(): Unit = {
    val rekey = GroupingKeyRekey(StructType.fromDDL("key STRUCT<id: STRING, n: INT>, userKey STRUCT<k: STRING>"),
      Seq(0), change("region STRING, id STRING, n INT", Map("region" -> "upper(id)")).toOption.flatten.get)
    val old = UnsafeProjection.create(StructType.fromDDL("key STRUCT<id: STRING, n: INT>, userKey STRUCT<k: STRING>"))(
      InternalRow(InternalRow(s("u3"), 4), InternalRow(s("app"))))
    val (key, grouping) = rekey.newRekey()(old)
    assertEquals("struct<key:struct<region:string,id:string,n:int>,userKey:struct<k:string>>",
      rekey.newKeySchema.simpleString)
    assertEquals(Seq(s("U3"), s("u3"), 4), grouping.toSeq(rekey.change.newKey))
    assertEquals(s("app"), key.getStruct(1, 1).getUTF8String(0))
  }

  @Test def aDroppedGroupingColumnIsRefusedSinceStatesWouldMeet(): Unit = {
    val Left(why) = change("id STRING", Map.empty)
    assertTrue(why, why.contains("differ only in `n` meet under one new key, in every state of the operator") &&
      why.contains("Fix: keep those key fields"))
  }

  @Test def aNewColumnIsGivenOverTheOldGroupingKeyOnly(): Unit = {
    val Left(why) = change("id STRING, n INT, region STRING", Map("region" -> "upper(device)"))
    assertTrue(why, why.contains("the expression given for key field `region` STRING, `upper(device)`"))
  }
}
