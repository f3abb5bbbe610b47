package io.statesnap.evolution

/**
 * What a field added to a state's schema reads for the entries written before it, where no rule gives it a value.
 * Each kind of state answers differently: a value field may read null; an aggregate's buffer field may not (null
 * starts some aggregates and not others), nor a map's user key field (a key field that reads null makes the old
 * entries meet). Each refusal names the fix for its kind.
 */
sealed trait AddedFields

object AddedFields {
  /** Null, where it is nullable (the state's values). */
  case object MayReadNull extends AddedFields
  /**
   * A streaming aggregation's buffer: the starting value a rule gives, else, for an aggregate the query being
   * deployed adds whole (every buffer field of it new), the start its plan gives (`planned`, Spark's own initial
   * buffer of the function, as if the aggregate had started at the deploy); else refused, the fix being the
   * aggregate's starting value.
   */
  final case class AggregateBuffers(planned: Seq[AggregateStart]) extends AddedFields
  object AggregateBuffers {
    /** No plan known (a store opened outside a query whose plan the driver read, a tool): every start is given. */
    val Unplanned: AggregateBuffers = AggregateBuffers(Nil)
  }
  /** Refused without a value: a map state's user key, whose fix is registered as the map's key (`map_key=`). */
  case object MapUserKey extends AddedFields
}

/**
 * An aggregate function of a planned streaming aggregation and its initial buffer: each buffer field's name (as
 * Spark names it) and starting value as a SQL literal, in the order of the buffer.
 * @param function the function as its SQL says it (`max(seen)`)
 * @param aliases the query's output columns that are this aggregate as it is (`max(seen) AS last_seen`)
 */
final case class AggregateStart(function: String, buffers: Seq[(String, String)], aliases: Seq[String] = Nil)

object AggregateStart {
  /**
   * A rule's field as the buffer field it means: a buffer field's own name, or the alias of an aggregate that keeps
   * one buffer field (`n` for `count(1) AS n`: `count`); Left(why) for the alias of one that keeps several (an
   * `avg`'s `sum` and `count`), which a rule must name field by field.
   */
  def bufferField(field: String, planned: Seq[AggregateStart]): Either[String, String] =
    if (planned.exists(_.buffers.exists(_._1 == field))) Right(field)
    else planned.find(_.aliases.contains(field)) match {
      case Some(AggregateStart(_, Seq((buffer, _)), _)) => Right(buffer)
      case Some(a) => Left(s"'$field' is aggregate `${a.function}`, which keeps several buffer fields " +
        s"(${a.buffers.map(_._1).mkString(", ")}): name them instead")
      case None => Right(field)
    }
}
