package io.statesnap.tools

import io.statesnap.meaning.OperatorMatch.{Added, Ambiguous, Kept, Removed}
import org.junit.Assert._
import org.junit.Test

/**
 * What a deploy makes of the operators' match ([[Reshape.shape]]): a state kept at another id moves, an operator
 * added starts empty, a state no operator computes is dropped only where the user names it, a state an operator
 * computes is started anew only where the user names it, and nothing else is dropped or guessed.
 */
class ReshapeTest {
  private def state(id: Long) = s"operator $id (dropDuplicates by `id`)"
  private def shape(drops: Long*)(matches: io.statesnap.meaning.OperatorMatch*) =
    Reshape.shape(matches, drops.toSet, Set.empty, state)
  private def anew(ids: Long*)(matches: io.statesnap.meaning.OperatorMatch*) =
    Reshape.shape(matches, Set.empty, ids.toSet, state)

  @Test def aStateKeptAtAnotherIdMovesAndAnOperatorAddedStartsEmpty(): Unit =
    assertEquals(Right(Reshape.Shape(Map(1L -> 2L), Seq(1L), Nil)), shape()(Kept(0, 0), Added(1), Kept(1, 2)))

  @Test def aStateNoOperatorComputesIsDroppedOnlyWhereTheUserNamesIt(): Unit = {
    assertEquals(Right(Reshape.Shape(Map.empty, Nil, Seq(1L, 2L))), shape(1, 2)(Kept(0, 0), Removed(1), Removed(2)))
    val refused = shape(1)(Kept(0, 0), Removed(1), Removed(2)).left.map(_.reason)
    assertTrue(refused.toString, refused.left.exists(r => r.startsWith("no stateful operator of the new version " +
      "computes the state of operator 2 (dropDuplicates by `id`) (an operator removed)") &&
      r.contains("statesnap.deploy(checkpoint, query, start, drop=[2])")))
  }

  @Test def aDropOfAStateAnOperatorComputesOrTheCheckpointHasNotIsRefused(): Unit = {
    val refused = shape(1, 7)(Kept(0, 0), Kept(1, 2), Added(1)).left.map(_.reason)
    assertEquals(Left("drop names states a deploy does not drop: the new version's operator 2 computes the state of " +
      "operator 1 (dropDuplicates by `id`): to start it anew, anew=[1]; the checkpoint keeps no state at operator 7. " +
      "A deploy drops only a state no operator of the new version computes (tools.rehearse says which: 'in the " +
      "checkpoint, not in the new version'). Fix: leave those ids out of drop"), refused)
  }

  @Test def operatorsNotToBeToldApartAreRefusedWhateverIsDropped(): Unit =
    assertTrue(shape(0, 1)(Ambiguous(0, Seq(0, 1)), Removed(0), Removed(1)).left.exists(_.isInstanceOf[
      ShapeRefusal.Ambiguous]))

  @Test def aStateAnOperatorComputesIsStartedAnewWhereTheUserNamesIt(): Unit = {
    val started = anew(1)(Kept(0, 0), Kept(1, 1))
    assertEquals(Right(Reshape.Shape(Map.empty, Nil, Nil, Map(1L -> 1L))), started)
    assertEquals(Seq(1L), started.toOption.get.empty)
    assertEquals(Seq(1L), started.toOption.get.retired)
    // Kept at another id and started anew: not moved, the operator at its new id starts empty.
    assertEquals(Right(Reshape.Shape(Map.empty, Seq(1L), Nil, Map(1L -> 2L))), anew(1)(Kept(0, 0), Added(1),
      Kept(1, 2)))
  }

  @Test def startingAnewAStateNoOperatorComputesOrTheCheckpointHasNotIsRefused(): Unit =
    assertEquals(Left("anew names states no operator of the new version computes: operator 1 (dropDuplicates by " +
      "`id`) is computed by no operator of the new version: to drop it, drop=[1]; the checkpoint keeps no state at " +
      "operator 7. A deploy starts anew a state an operator still computes (tools.rehearse names each operator's). " +
      "Fix: leave those ids out of anew (drop=[...] drops a state no operator computes)"),
      anew(1, 7)(Kept(0, 0), Removed(1)).left.map(_.reason))
}
