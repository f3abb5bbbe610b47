package io.statesnap.keys

import io.statesnap.evolution.{AddedFields, CompatibilityMode, Declaration, EvolutionStep, RecordedSchema,
  RowSchemaEvolution, Rules, SqlSettings, StateEvolution}
import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, Average, CollectList, Count, First,
  HyperLogLogPlusPlus, Max, Min, Sum}
import org.apache.spark.sql.types.{DecimalType, LongType, StringType, StructType}
import org.junit.Assert._
import org.junit.Test

/**
 * An aggregate a deploy adds to a streaming aggregation starts from its plan's initial buffer ([[AggregateMerge]]'s
 * `starts`, shipped to the stores as SQL literals): each literal reads back as Spark's own initial value; it applies
 * only to an aggregate every buffer field of which is new, and never over a start the user registers.
 */
class AggregateStartsTest {
  private val value = AttributeReference("value", LongType)()
  private val op = AttributeReference("op", StringType)()
  private val price = AttributeReference("price", DecimalType(10, 2))()

  @Test def eachStartReadsBackAsSparksInitialBuffer(): Unit = {
    val merge = AggregateMerge(Seq(Count(Seq(value)), Sum(value), Sum(price), new Average(value), Max(op),
      First(op, false), CollectList(value), HyperLogLogPlusPlus(value)))
    val initial = merge.initialBuffer
    val fields = merge.bufferSchema.fields
    val starts = merge.starts.flatMap(_.buffers)
    assertEquals(fields.map(_.name).toSeq, starts.map(_._1))
    fields.zip(starts).zipWithIndex.foreach { case ((field, (name, sql)), i) =>
      val read = RowSchemaEvolution.defaultValue(field, name, sql, SqlSettings.Default)
        .fold(p => fail(s"$name: ${p.describe}"), identity).asInstanceOf[Literal]
      assertEquals(s"$name = $sql", Literal(initial.get(i, field.dataType), field.dataType), read)
    }
  }

  private def resolve(old: String, now: Seq[AggregateFunction], planned: Boolean = true) = {
    val merge = AggregateMerge(now)
    StateEvolution.resolve(RecordedSchema(0, StructType.fromDDL(old)), Nil,
      Declaration(merge.bufferSchema, 0, Nil, SqlSettings.Default), CompatibilityMode.Default,
      AddedFields.AggregateBuffers(if (planned) merge.starts else Nil))
  }

  private def stored(schema: String, values: Any*): UnsafeRow = {
    val s = StructType.fromDDL(schema)
    val bytes = UnsafeProjection.create(s)(InternalRow.fromSeq(values)).copy()
    val row = new UnsafeRow(s.length)
    row.pointTo(bytes.getBaseObject, bytes.getBaseOffset, bytes.getSizeInBytes)
    row
  }

  @Test def anAggregateAddedWholeStartsAtTheDeployAndSaysSo(): Unit = resolve("max BIGINT",
      Seq(Max(value), Count(Seq(value)), Min(value))) match {
    case CompatibleAfterMigration(m) =>
      val migrated = m.migrate(stored("max BIGINT", 9L))
      assertEquals(Seq(9L, 0L, null), Seq(migrated.getLong(0), migrated.getLong(1), migrated.get(2, LongType)))
      assertEquals(Seq("add 'count' bigint (existing entries read 0L: aggregate `count(value)` starts at the deploy)",
        "add 'min' bigint (existing entries read CAST(NULL AS BIGINT): aggregate `min(value)` starts at the " +
          "deploy)"), m.changes)
    case other => fail(s"expected a migration, got $other")
  }

  @Test def withoutThePlanAnAddedAggregateIsRefusedNamingItsStart(): Unit =
    resolve("max BIGINT", Seq(Max(value), Count(Seq(value))), planned = false) match {
      case Incompatible(problems) => assertTrue(problems.map(_.describe).mkString, problems.exists(p =>
        p.describe.contains("field 'count'") && p.describe.contains("defaults={'count': '0'}")))
      case other => fail(s"expected a refusal, got $other")
    }

  /** sum(value) becomes avg(value): avg's sum would keep the old total beside a count started at 0. */
  @Test def anAggregateOnlyPartlyNewGetsNoStart(): Unit = resolve("sum BIGINT", Seq(new Average(value))) match {
    case Incompatible(problems) => assertTrue(problems.map(_.describe).mkString,
      problems.exists(_.describe.contains("field 'count'")))
    case other => fail(s"expected a refusal, got $other")
  }

  @Test def aStartTheUserRegistersWins(): Unit = {
    val merge = AggregateMerge(Seq(Max(value), Count(Seq(value))))
    val declared = Declaration(merge.bufferSchema, 1, Seq(EvolutionStep(1, None,
      Rules(defaults = Map("count" -> "5")))), SqlSettings.Default)
    StateEvolution.resolve(RecordedSchema(0, StructType.fromDDL("max BIGINT")), Nil, declared,
      CompatibilityMode.Default, AddedFields.AggregateBuffers(merge.starts)) match {
      case CompatibleAfterMigration(m) =>
        assertEquals(5L, m.migrate(stored("max BIGINT", 9L)).getLong(1))
        assertEquals(Seq("add 'count' bigint (existing entries read 5)"), m.changes)
      case other => fail(s"expected a migration, got $other")
    }
  }

  /** Buffers of every kind: a string's (variable length), an approximate count's (fields named `MS[0]`...). */
  @Test def aStringAndAnApproximateCountAddedWholeStartAsSparkStartsThem(): Unit = {
    val merge = AggregateMerge(Seq(Count(Seq(value)), Max(op), HyperLogLogPlusPlus(value)))
    resolve("count BIGINT NOT NULL", merge.functions) match {
      case CompatibleAfterMigration(m) =>
        val migrated = m.migrate(stored("count BIGINT NOT NULL", 3L))
        val initial = merge.initialBuffer
        assertEquals(3L, migrated.getLong(0))
        assertTrue(migrated.isNullAt(1))
        (2 until merge.bufferSchema.length).foreach(i => assertEquals(initial.getLong(i), migrated.getLong(i)))
      case other => fail(s"expected a migration, got $other")
    }
  }
}
