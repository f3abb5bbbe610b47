package io.statesnap.checkpoint

import scala.annotation.tailrec

import io.statesnap.StatesnapException
import io.statesnap.evolution.ProblemAt
import io.statesnap.keys.KeyChange
import io.statesnap.provider.{StateDecision, StateWalk}

/**
 * What a restart does to one stateful operator's state, decided before any task from the checkpoint and the new
 * version's plan ([[PlannedOperatorDecision.operator]]): what its state means now first, then each of its states as
 * its stores will step them. The driver throws a refusal before the batch's tasks, a rehearsal reports every case,
 * a deploy's offline step migrates what it says. A key change is decided offline (`KeyChangePlan`, for `change_key`
 * and a deploy): the operator is [[Rekeyed]], or refused naming the field and the fix.
 */
sealed trait OperatorDecision {
  /** The error the restart raises, naming the state, its fields and the fix; None unless refused. */
  def refusal: Option[StatesnapException] = None
}

object OperatorDecision {
  /**
   * Each of its states that has a record, stepped (as is, recorded anew, migrating), none refused; no state at all
   * where the stores open a version other than the latest committed.
   */
  final case class Decided(states: Seq[StateWalk.Step]) extends OperatorDecision {
    /** The states whose every entry is rewritten as the batch opens them. */
    def migrating: Seq[StateWalk.Step] = states.filter(_.decided.isInstanceOf[StateDecision.Migrate])
  }

  /**
   * Refused before anything is read or written: by what its state means now, or by one of its states.
   * @param ofKey it is its key that is refused (fed by other columns, of another layout, under other names): a key
   *   change makes it offline, where one can ([[Rekeyed]])
   */
  final case class Refused(error: StatesnapException, ofKey: Boolean = false) extends OperatorDecision {
    override def refusal: Option[StatesnapException] = Some(error)
  }

  /**
   * Its key changes, offline only: every entry given its new key by `change` (its values too, where its aggregates
   * change with it), in the partition Spark's partitioning of the new key reads. A restart without it is refused
   * ([[Refused.ofKey]]).
   */
  final case class Rekeyed(change: KeyChange) extends OperatorDecision

  /** Left to its stores as they open: the plan or the checkpoint does not say enough (a join on 3.5). */
  case object Unjudged extends OperatorDecision

  /** The operator whose states step as `steps`, refused by the first that refuses (no later state is decided). */
  def of(steps: Iterator[StateWalk.Step]): OperatorDecision = {
    @tailrec def next(decided: Vector[StateWalk.Step]): OperatorDecision =
      if (!steps.hasNext) Decided(decided)
      else {
        val step = steps.next()
        step.refusal match {
          case Some(error) => Refused(error, refusesKey(step.decided))
          case None => next(decided :+ step)
        }
      }
    next(Vector.empty)
  }

  /** Whether `decided` refuses a state's key: a problem of its key, or the key under other names. */
  private def refusesKey(decided: StateDecision): Boolean = decided match {
    case refuse: StateDecision.Refuse => refuse.keyRenamed || refuse.problems.exists(_.at == ProblemAt.Key)
    case _ => false
  }
}
