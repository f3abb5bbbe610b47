package io.statesnap.meaning

/**
 * How one stateful operator of a restarted query's plan, or of its checkpoint, stands to the other side, decided by
 * what each computes ([[OperatorMatching]]), not by its place alone.
 */
sealed trait OperatorMatch

object OperatorMatch {
  /** The state the checkpoint keeps at `recorded` is the one the planned operator at `planned` computes. */
  final case class Kept(recorded: Long, planned: Long) extends OperatorMatch {
    def moved: Boolean = recorded != planned
  }

  /** The planned operator at `planned` computes no state the checkpoint keeps: its state would start empty. */
  final case class Added(planned: Long) extends OperatorMatch

  /** The checkpoint's state at `recorded` is computed by no planned operator. */
  final case class Removed(recorded: Long) extends OperatorMatch

  /**
   * The planned operator at `planned` computes what each of `candidates` (ids of the checkpoint) recorded, none at its
   * own place: what each computes cannot tell which state is its.
   */
  final case class Ambiguous(planned: Long, candidates: Seq[Long]) extends OperatorMatch
}

/**
 * The new plan's stateful operators matched with the checkpoint's by what each computes ([[OperatorMeaning]]): Spark
 * finds an operator's state by its place in the plan (operator ids, top first), so a stateful operator added, removed
 * or reordered moves every state after it, and two operators of the same schemas swapped (a union's branches) read
 * each other's. Matched in this order, each pair the only candidate of the other among the operators not matched yet:
 *  0. the name the user gives the operator in both versions (`statesnap.named`, as Flink's `uid`), the same operator,
 *     key columns and aggregates: at any place, whatever feeds it;
 *  1. the same operator, key columns (under any names), aggregates and input ([[OperatorMeaning.computesAs]]), at any
 *     place (an operator recorded without its input, by an earlier statesnap, is matched at its own place only);
 *  2. at the same place, the same operator, key columns and aggregates, its input alone changed (a filter added, a
 *     stateful operator inserted below it): still itself;
 *  3. at the same place, the same kind of operator, or one whose meaning is not recorded: its key and values are then
 *     decided as a restart in place decides them (a key fed by other columns refused, aggregates added migrated).
 * Two operators named differently are never matched. Operators that each compute what the same several states
 * computed are told apart by their places (2, 3) only where they stand at those states' places, all of them (the same
 * operators, nothing moved); elsewhere (two dedups of a union's sources under an added aggregation) they are
 * [[OperatorMatch.Ambiguous]]: taking the one at a state's place for its own would give it another's; and the states
 * they may compute are not another operator's by its place alone (a dedup fed anew at one's place). Anything else
 * is added or removed: the same computation fed another way at another place is never taken for a move, since the
 * input is what tells a union's branches apart.
 */
object OperatorMatching {
  /**
   * @param recorded each operator id the checkpoint keeps state for, with the meaning recorded for it, if any
   * @param planned each operator id of the new plan, with what its state means, if the plan says
   * @return one match per planned operator, in id order, then each recorded state no planned operator computes (nor
   *   may: an [[OperatorMatch.Ambiguous]] operator's candidates are named there only)
   */
  def apply(recorded: Map[Long, Option[OperatorMeaning]], planned: Map[Long, Option[OperatorMeaning]])
      : Seq[OperatorMatch] = {
    var kept = Map.empty[Long, Long] // planned -> recorded
    var ambiguous = Map.empty[Long, Seq[Long]]
    def free(candidates: Seq[Long]) = candidates.filterNot(kept.values.toSet)
    def matchAll(candidatesOf: (Long, OperatorMeaning) => Seq[Long], skip: Set[Long] = Set.empty): Unit = {
      val open = planned.toSeq.sortBy(_._1).collect { case (id, Some(m)) if !kept.contains(id) && !skip(id) => id -> m }
      val offered = open.map { case (id, m) => id -> free(candidatesOf(id, m)) }
      val claims = offered.flatMap(_._2).groupBy(identity).map { case (r, all) => r -> all.size }
      offered.foreach {
        case (id, Seq(only)) if claims(only) == 1 => kept += id -> only; ambiguous -= id
        case (id, several) if several.size > 1 => ambiguous += id -> several
        case _ =>
      }
    }
    val known = recorded.collect { case (id, Some(m)) => id -> m }
    val byId = known.toSeq.sortBy(_._1)
    // Each pass's candidates at the planned operator's own place: the state there, where `same` holds of it.
    def atPlace(at: Long, now: OperatorMeaning, same: Option[OperatorMeaning] => Boolean) =
      recorded.get(at).filter(was => was.forall(namesAgree(_, now)) && same(was)).map(_ => at).toSeq
    matchAll((_, now) => now.name.toSeq.flatMap(name => byId.collect {
      case (id, was) if was.name.contains(name) && sameButInput(was, now) => id
    }))
    matchAll((_, now) => byId.collect {
      case (id, was) if was.input.nonEmpty && namesAgree(was, now) && now.computesAs(was) => id
    })
    val unplaceable = ambiguous.collect { case (id, candidates) if ambiguous.collect {
      case (other, `candidates`) => other }.toSet != candidates.toSet => id }.toSet
    // A state such an operator computes is not another's by its place alone.
    val contested = ambiguous.filter { case (id, _) => unplaceable(id) }.values.flatten.toSet
    matchAll((at, now) => atPlace(at, now, _.exists(sameButInput(_, now))).filterNot(contested), unplaceable)
    matchAll((at, now) => atPlace(at, now, _.forall(_.operator == now.operator)).filterNot(contested), unplaceable)
    // A planned operator the plan says nothing of keeps the state at its place, as Spark reads it.
    planned.keys.filter(id => planned(id).isEmpty && recorded.contains(id) && !kept.values.toSet(id) &&
      !contested(id)).foreach(id => kept += id -> id)
    val matched = kept.values.toSet
    val ofPlanned = planned.keys.toSeq.sorted.map { id =>
      kept.get(id).map(OperatorMatch.Kept(_, id)).orElse(ambiguous.get(id).map(_.filterNot(matched))
        .filter(c => c.size > 1 || unplaceable(id) && c.nonEmpty).map(OperatorMatch.Ambiguous(id, _)))
        .getOrElse(OperatorMatch.Added(id))
    }
    // A state an ambiguous operator may compute is said there, not as removed too.
    val claimed = matched ++ ofPlanned.collect { case a: OperatorMatch.Ambiguous => a.candidates }.flatten
    ofPlanned ++ recorded.keys.toSeq.sorted.filterNot(claimed).map(OperatorMatch.Removed)
  }

  /** How a state of the checkpoint at `id` is named to a user: its id, and what it computes where that is recorded. */
  def stateAt(id: Long, recorded: Map[Long, OperatorMeaning]): String =
    recorded.get(id).fold(s"operator $id")(m => s"operator $id (${m.describe})")

  /** The same operator, key columns and aggregates, fed another way. */
  private def sameButInput(was: OperatorMeaning, now: OperatorMeaning): Boolean =
    now.computesAs(was.copy(input = now.input))

  /** Whether two operators' names leave them the same: unless each has one, and the two differ. */
  private def namesAgree(was: OperatorMeaning, now: OperatorMeaning): Boolean =
    was.name.isEmpty || now.name.isEmpty || was.name == now.name
}
