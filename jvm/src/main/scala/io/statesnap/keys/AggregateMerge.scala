package io.statesnap.keys

import io.statesnap.StatesnapErrors

import org.apache.spark.sql.catalyst.InternalRow
import io.statesnap.evolution.AggregateStart
import org.apache.spark.sql.catalyst.expressions.{BindReferences, JoinedRow, Literal, MutableProjection,
  SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, DeclarativeAggregate,
  ImperativeAggregate, TypedImperativeAggregate}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * Two buffers of a streaming aggregation's state merged as Spark merges partial aggregates, by each aggregate
 * function's own merge, taken from the plan of the query being deployed: a declarative function's
 * `mergeExpressions`, an imperative one's `merge` (a typed one's buffer deserialized first and serialized after, as
 * Spark's object hash aggregate does). So `count`, `sum`, `avg`, `min`, `max`, `approx_count_distinct`,
 * `collect_list` and user aggregates merge exactly as Spark merges them, never by a guess from buffer names.
 * Built on the driver, shipped to the tasks; each task makes its own [[newMerger]].
 */
final case class AggregateMerge(functions: Seq[AggregateFunction]) extends ValueMerge {
  /** The layout of a buffer: the functions' buffers one after the other, as Spark's state keeps them. */
  def bufferSchema: StructType =
    StructType(functions.flatMap(_.aggBufferAttributes).map(a => StructField(a.name, a.dataType, a.nullable)))

  override def describe: String = functions.map(_.prettyName).mkString(", ")

  /**
   * Every function's initial buffer, one after the other, as Spark starts it: a declarative function's
   * `initialValues`, an imperative one's `initialize`, a typed one's serialized. What an aggregate holds if it started
   * now.
   */
  def initialBuffer: InternalRow = {
    val initial = new SpecificInternalRow(functions.flatMap(_.aggBufferAttributes).map(_.dataType))
    functions.zip(functions.scanLeft(0)(_ + _.aggBufferAttributes.size)).foreach {
      case (d: DeclarativeAggregate, at) =>
        d.initialValues.zipWithIndex.foreach { case (e, i) => initial.update(at + i, e.eval()) }
      case (typed: TypedImperativeAggregate[_], at) =>
        val placed = typed.withNewMutableAggBufferOffset(at).asInstanceOf[TypedImperativeAggregate[_]]
        placed.initialize(initial)
        placed.serializeAggregateBufferInPlace(initial)
      case (f: ImperativeAggregate, at) => f.withNewMutableAggBufferOffset(at).initialize(initial)
      case (f, _) => throw StatesnapErrors.internal(s"aggregate ${f.sql(false)} has no initial buffer")
    }
    initial
  }

  /**
   * Each function's initial buffer ([[initialBuffer]]) as SQL literals by buffer field name: how the stores start an
   * aggregate a deploy adds, shipped to them in the query's conf.
   */
  def starts: Seq[AggregateStart] = {
    val initial = initialBuffer
    functions.zip(functions.scanLeft(0)(_ + _.aggBufferAttributes.size)).map { case (f, at) =>
      AggregateStart(f.sql(false), f.aggBufferAttributes.zipWithIndex.map { case (a, i) =>
        a.name -> Literal(initial.get(at + i, a.dataType), a.dataType).sql
      })
    }
  }

  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = {
    val types = functions.flatMap(_.aggBufferAttributes).map(_.dataType)
    val offsets = functions.scanLeft(0)(_ + _.aggBufferAttributes.size)
    val placed = functions.zip(offsets)
    // A declarative function's merge reads its buffer (left) and the other's (right, its input buffer attributes).
    val inputs = functions.flatMap(_.aggBufferAttributes) ++ functions.flatMap(_.inputAggBufferAttributes)
    val declared = placed.collect { case (d: DeclarativeAggregate, at) =>
      d.mergeExpressions.zipWithIndex.map { case (e, i) => (at + i, BindReferences.bindReference(e, inputs)) }
    }.flatten
    val imperative = placed.collect { case (f: ImperativeAggregate, at) =>
      (f.withNewMutableAggBufferOffset(at).withNewInputAggBufferOffset(at), at)
    }
    val merged = MutableProjection.create(declared.map(_._2))
    val buffer = new SpecificInternalRow(types)
    val out = UnsafeProjection.create(types.toArray)
    val joined = new JoinedRow
    (left, right) => {
      types.indices.foreach(i => buffer.update(i, left.get(i, types(i))))
      val values = merged(joined(left, right))
      declared.indices.foreach { i =>
        val at = declared(i)._1
        buffer.update(at, values.get(i, types(at)))
      }
      imperative.foreach {
        case (typed: TypedImperativeAggregate[_], at) =>
          // The state keeps a typed function's buffer serialized; its merge works on the object.
          if (!buffer.isNullAt(at)) buffer.update(at, typed.deserialize(buffer.getBinary(at)))
          typed.merge(buffer, right)
          typed.serializeAggregateBufferInPlace(buffer)
        case (f, _) => f.merge(buffer, right)
      }
      out(buffer).copy()
    }
  }
}
