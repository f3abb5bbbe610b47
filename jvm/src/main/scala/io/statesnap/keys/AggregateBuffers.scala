package io.statesnap.keys

import io.statesnap.meaning.{AggregateMatch, MeantAggregate}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction

/**
 * A streaming aggregation's buffers when a deploy changes its aggregate functions: each function of the new
 * version keeps the buffer of the same function of the previous version (the same function over the same columns, by
 * its SQL: `sum(value)`, `count(1)`), or, new, starts from its own initial buffer (Spark's `initialValues`, an
 * imperative function's `initialize`), exactly as if it had started at the deploy; a function the new version drops
 * drops its buffer. Both lists come from the plans of the two versions' queries, never from buffer names.
 * Built on the driver, shipped to the tasks; each task makes its own [[newConverter]].
 *
 * @param kept for each new function, the index of the previous one whose buffer it keeps, if any
 */
final case class AggregateBuffers(previous: AggregateMerge, now: AggregateMerge, kept: Seq[Option[Int]]) {
  import AggregateBuffers.sqlOf

  /** Every function keeps its buffer, in the same order: the values stay as they are. */
  def unchanged: Boolean =
    previous.functions.size == now.functions.size && kept == previous.functions.indices.map(Some(_))

  /** What each function's buffer gets, for the tool's report. */
  def says: Seq[String] = now.functions.zip(kept).map {
    case (f, Some(_)) => s"aggregate `${sqlOf(f)}`: kept"
    case (f, None) => s"aggregate `${sqlOf(f)}`: new, starts at the deploy (its initial value)"
  } ++ previous.functions.indices.filterNot(i => kept.contains(Some(i))).map(i =>
    s"aggregate `${sqlOf(previous.functions(i))}`: dropped")

  /** A previous buffer in the new layout. Not thread-safe: one per task; the row returned is reused. */
  def newConverter(): InternalRow => UnsafeRow = {
    val oldTypes = previous.functions.flatMap(_.aggBufferAttributes).map(_.dataType)
    val types = now.functions.flatMap(_.aggBufferAttributes).map(_.dataType)
    val oldOffsets = previous.functions.scanLeft(0)(_ + _.aggBufferAttributes.size)
    val offsets = now.functions.scanLeft(0)(_ + _.aggBufferAttributes.size)
    val copies = now.functions.indices.flatMap(n => kept(n).toSeq.flatMap(o =>
      (0 until now.functions(n).aggBufferAttributes.size).map(i => (oldOffsets(o) + i, offsets(n) + i))))
    val initial = now.initialBuffer
    val initialValues = types.indices.map(i => initial.get(i, types(i)))
    val buffer = new SpecificInternalRow(types)
    val out = UnsafeProjection.create(types.toArray)
    old => {
      types.indices.foreach(i => buffer.update(i, initialValues(i)))
      copies.foreach { case (from, to) => buffer.update(to, old.get(from, oldTypes(from))) }
      out(buffer)
    }
  }
}

object AggregateBuffers {
  /**
   * The buffers of `now`'s functions from those of `previous`, matched as a restart matches them
   * ([[io.statesnap.meaning.AggregateMatch]]): each new function with the first previous one not matched yet that
   * has its SQL and its buffer's types.
   */
  def apply(previous: AggregateMerge, now: AggregateMerge): AggregateBuffers =
    AggregateBuffers(previous, now, AggregateMatch(meant(previous), meant(now)).kept)

  /** A function as its SQL says it (`sum(value)`); never distinct: a streaming aggregation has no distinct ones. */
  def sqlOf(f: AggregateFunction): String = f.sql(false)

  private def meant(merge: AggregateMerge): Seq[MeantAggregate] = merge.functions.map(f => MeantAggregate(sqlOf(f),
    f.aggBufferAttributes.map(b => b.name -> b.dataType.catalogString), sqlOf(f)))
}
