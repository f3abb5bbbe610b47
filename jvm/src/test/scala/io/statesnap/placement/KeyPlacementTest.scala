package io.statesnap.placement

import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * The hashing facts [[KeyPlacement]] relies on, on this minor's Spark: a field after the operator's key changes no
 * placement, a struct places as its fields, a key without fields is partition 0. Real keys on disk:
 * tests/test_key_placement.py.
 */
class KeyPlacementTest {
  private val keys = (0 until 200).map(i => (UTF8String.fromString(s"k$i"), i.toLong))

  private def placed(schema: String, partitionKey: PartitionKey, row: ((UTF8String, Long)) => InternalRow) = {
    val placement = new KeyPlacement(StructType.fromDDL(schema), partitionKey, 7)
    keys.map(k => placement.partition(row(k)))
  }

  @Test def aFieldAfterTheOperatorsKeyChangesNoPlacement(): Unit = {
    val plain = placed("id STRING, n BIGINT", PartitionKey.WholeKey, { case (s, n) => InternalRow(s, n) })
    assertEquals(plain, placed("id STRING, n BIGINT, sessionStartTime TIMESTAMP", PartitionKey.WithoutLastField,
      { case (s, n) => InternalRow(s, n, 12345L) }))
    assertTrue("the keys spread over the partitions", plain.distinct.size == 7)
  }

  @Test def aStructPlacesAsItsFields(): Unit =
    assertEquals(placed("id STRING, n BIGINT", PartitionKey.WholeKey, { case (s, n) => InternalRow(s, n) }),
      placed("key STRUCT<id: STRING, n: BIGINT>", PartitionKey.WholeKey,
        { case (s, n) => InternalRow(InternalRow(s, n)) }))

  @Test def aKeyWithoutFieldsIsInPartitionZero(): Unit =
    assertEquals(0, new KeyPlacement(new StructType(), PartitionKey.WholeKey, 5).partition(InternalRow()))

  @Test def eachOperatorsStoresHaveTheirPartitionKey(): Unit = {
    assertEquals(Right(PartitionKey.WholeKey), PartitionKey.of(SparkOperator.Aggregation, "default"))
    assertEquals(Right(PartitionKey.WithoutLastField), PartitionKey.of(SparkOperator.SessionWindow, "default"))
    assertEquals(Right(PartitionKey.WholeKey), PartitionKey.of(SparkOperator.StreamStreamJoin, "left-keyToNumValues"))
    assertEquals(Right(PartitionKey.WithoutLastField),
      PartitionKey.of(SparkOperator.StreamStreamJoin, "right-keyWithIndexToValue"))
    assertTrue(PartitionKey.of(SparkOperator.StreamStreamJoin, "left-keyWithTsToValues").isLeft)
    assertTrue(PartitionKey.of(SparkOperator.Unknown("2147483648"), "default").isLeft)
    assertEquals(PartitionKey.WholeKey, PartitionKey.ofVariable(StateKind.Value))
    assertEquals(PartitionKey.WholeKey, PartitionKey.ofVariable(StateKind.List))
    assertEquals(PartitionKey.WithoutLastField, PartitionKey.ofVariable(StateKind.Map))
  }
}
