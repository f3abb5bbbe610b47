package io.statesnap.meaning

import io.statesnap.evolution.ChangeKeyFix
import org.apache.spark.sql.types.{IntegerType, LongType, StringType, StructField, StructType}
import org.junit.Assert._
import org.junit.Test

/**
 * The one definition of "the same key" ([[SameKey]]): by the columns that feed each field where the plan says them,
 * else by name; never by type and position alone.
 */
class SameKeyTest {
  private val userRegion = StructType.fromDDL("user STRING, region STRING")
  private def fed(key: StructType, sources: String*) =
    key.fields.toSeq.zip(sources).map { case (f, s) => KeyColumn(f.name, s, f.dataType.catalogString) }

  @Test def byNameWhereThePlanSaysNothing(): Unit = {
    assertTrue(SameKey(userRegion, userRegion, None))
    assertFalse("reordered", SameKey(userRegion, StructType.fromDDL("region STRING, user STRING"), None))
    assertFalse("renamed", SameKey(userRegion, StructType.fromDDL("user STRING, zone STRING"), None))
    assertFalse("retyped", SameKey(StructType.fromDDL("n INT"), StructType.fromDDL("n BIGINT"), None))
    assertFalse("a field added", SameKey(userRegion, StructType.fromDDL("user STRING, region STRING, d INT"), None))
  }

  @Test def nullabilityIsNotAnotherKey(): Unit = {
    val strict = StructType(Seq(StructField("n", IntegerType, nullable = false)))
    assertTrue(SameKey(strict, StructType(Seq(StructField("n", IntegerType))), None))
  }

  @Test def byTheColumnsThatFeedItWhereThePlanSaysThem(): Unit = {
    val zone = StructType.fromDDL("user STRING, zone STRING")
    val renamed = Some(KeySources(fed(userRegion, "user", "region"), fed(zone, "user", "region")))
    assertTrue("the same columns under another name", SameKey(userRegion, zone, renamed))
    val otherColumn = Some(KeySources(fed(userRegion, "user", "region"), fed(userRegion, "user", "country")))
    assertFalse("the same names and types, another column", SameKey(userRegion, userRegion, otherColumn))
    assertFalse(SameKey.columns(otherColumn.get.old, otherColumn.get.now))
    assertTrue(SameKey.columns(renamed.get.old, renamed.get.now))
  }

  @Test def aKeyGainsTheFieldsNoOldFieldIs(): Unit = {
    val zone = StructType.fromDDL("user STRING, zone STRING")
    assertEquals("by name", Seq("zone"), SameKey.changeKeyFix(userRegion, zone, None).keys.map(_._1))
    val renamed = Some(KeySources(fed(userRegion, "user", "region"), fed(zone, "user", "region")))
    assertEquals("the same column renamed", Nil, SameKey.changeKeyFix(userRegion, zone, renamed).keys)
    val otherColumn = Some(KeySources(fed(userRegion, "user", "region"), fed(userRegion, "user", "country")))
    assertEquals("another column under the old name", Seq("region" -> ChangeKeyFix.UnknownSql),
      SameKey.changeKeyFix(userRegion, userRegion, otherColumn).keys)
    assertEquals(Seq("region"), otherColumn.get.gained.map(_.name))
  }

  @Test def aKeptFieldThatMayLoseValuesIsCastExplicitly(): Unit = {
    val wide = StructType.fromDDL("user STRING, n BIGINT")
    assertEquals("a narrowing", Seq("n" -> "CAST(n AS INT)"),
      SameKey.changeKeyFix(wide, StructType.fromDDL("user STRING, n INT"), None).keys)
    assertEquals("a widening is kept", Nil,
      SameKey.changeKeyFix(StructType.fromDDL("user STRING, n INT"), wide, None).keys)
    // The cast reads the old field, under its old name where the plan says the same column feeds a renamed one.
    val count = StructType.fromDDL("user STRING, count INT")
    val renamed = Some(KeySources(fed(wide, "user", "n"), fed(count, "user", "n")))
    assertEquals(Seq("count" -> "CAST(n AS INT)"), SameKey.changeKeyFix(wide, count, renamed).keys)
    assertTrue("a string read as a number", SameKey.narrows(StringType, LongType))
  }

  @Test def sourcesOfOtherKeysAreNotUsed(): Unit = {
    val elsewhere = Some(KeySources(fed(StructType.fromDDL("a STRING"), "a"), fed(StructType.fromDDL("b STRING"), "a")))
    assertTrue("by name", SameKey(userRegion, userRegion, elsewhere))
    assertEquals(Some(1), SameKey.oldFieldOf(userRegion, StructType.fromDDL("region STRING"), elsewhere)(0))
  }
}
