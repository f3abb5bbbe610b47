package io.statesnap.checkpoint

import scala.annotation.tailrec

import io.statesnap.StatesnapException
import io.statesnap.provider.{StateDecision, StateWalk}

/**
 * What a restart does to one stateful operator's state, decided before any task from the checkpoint and the new
 * version's plan ([[PlannedOperatorDecision.operator]]): what its state means now first, then each of its states as
 * its stores will step them. The driver throws a refusal before the batch's tasks, a rehearsal reports every case,
 * a deploy's offline step migrates what it says.
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

  /** Refused before anything is read or written: by what its state means now, or by one of its states. */
  final case class Refused(error: StatesnapException) extends OperatorDecision {
    override def refusal: Option[StatesnapException] = Some(error)
  }

  /** Left to its stores as they open: the plan or the checkpoint does not say enough (a join on 3.5). */
  case object Unjudged extends OperatorDecision

  /** The operator whose states step as `steps`, refused by the first that refuses (no later state is decided). */
  def of(steps: Iterator[StateWalk.Step]): OperatorDecision = {
    @tailrec def next(decided: Vector[StateWalk.Step]): OperatorDecision =
      if (!steps.hasNext) Decided(decided)
      else {
        val step = steps.next()
        step.refusal match {
          case Some(error) => Refused(error)
          case None => next(decided :+ step)
        }
      }
    next(Vector.empty)
  }
}
