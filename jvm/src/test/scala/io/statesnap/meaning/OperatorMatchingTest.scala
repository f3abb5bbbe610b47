package io.statesnap.meaning

import io.statesnap.meaning.OperatorMatch.{Added, Ambiguous, Kept, Removed}
import org.junit.Assert._
import org.junit.Test

/**
 * A restarted query's stateful operators matched with its checkpoint's by what each computes, not by its place: the
 * shape changes users make (an operator inserted above or below another, removed, a union's branches swapped) each
 * read as what it is, and nothing taken for a move that the operators' meanings do not show.
 */
class OperatorMatchingTest {
  private def key(columns: String*) = columns.map(c => KeyColumn(c, c, "string"))
  private val count = MeantAggregate("count(1)", Seq("count" -> "bigint"), "count(1)")
  private def counted(input: String, by: String = "user") =
    OperatorMeaning("streaming aggregation", key(by), Seq(count), Some(input))
  private def dedup(input: String) = OperatorMeaning("dropDuplicates", key("id"), Nil, Some(input))
  private def matched(recorded: (Long, OperatorMeaning)*)(planned: (Long, OperatorMeaning)*): Seq[OperatorMatch] =
    OperatorMatching(recorded.map { case (id, m) => id -> Some(m) }.toMap,
      planned.map { case (id, m) => id -> Some(m) }.toMap)

  private val (clicks, views) = (counted("where (type = 'click')"), counted("where (type = 'view')"))

  @Test def theSameOperatorsAreKeptInPlace(): Unit =
    assertEquals(Seq(Kept(0, 0), Kept(1, 1)), matched(0L -> clicks, 1L -> views)(0L -> clicks, 1L -> views))

  @Test def aDedupInsertedBelowAnAggregationIsAddedAndTheAggregationKeepsItsState(): Unit = {
    // Operator ids are given top first: the aggregation keeps 0, fed now by the dedup, which gets 1.
    assertEquals(Seq(Kept(0, 0), Added(1)),
      matched(0L -> counted("source"))(0L -> counted("dropDuplicates(id) <- source"), 1L -> dedup("source")))
    assertEquals("inserted above it, the aggregation moves to 1 with its input as it was",
      Seq(Added(0), Kept(0, 1)), matched(0L -> counted("source"))(0L -> dedup("aggregation"), 1L -> counted("source")))
  }

  @Test def aDedupRemovedIsRemovedAndTheAggregationAboveItKeepsItsState(): Unit =
    assertEquals(Seq(Kept(0, 0), Removed(1)),
      matched(0L -> counted("dropDuplicates(id) <- source"), 1L -> dedup("source"))(0L -> counted("source")))

  @Test def aUnionsBranchesSwappedKeepTheirStatesAtEachOthersPlaces(): Unit = {
    assertEquals(Seq(Kept(1, 0), Kept(0, 1)), matched(0L -> clicks, 1L -> views)(0L -> views, 1L -> clicks))
    assertEquals("one branch removed and another appended: the views' counts move, the clicks' are nobody's",
      Seq(Kept(1, 0), Added(1), Removed(0)),
      matched(0L -> clicks, 1L -> views)(0L -> views, 1L -> counted("where (type = 'purchase')")))
  }

  @Test def theSameComputationFedAnotherWayIsTakenForItselfOnlyAtItsPlace(): Unit = {
    val taps = counted("where (type = 'tap')")
    assertEquals("a filter changed in place", Seq(Kept(0, 0), Kept(1, 1)),
      matched(0L -> clicks, 1L -> views)(0L -> taps, 1L -> views))
    assertEquals("elsewhere, it is another operator", Seq(Added(0), Kept(1, 1), Added(2), Removed(0)),
      matched(0L -> clicks, 1L -> views)(0L -> dedup("source"), 1L -> views, 2L -> taps))
  }

  @Test def aKeyOrAggregatesChangedInPlaceAreTheRestartsToDecide(): Unit =
    assertEquals(Seq(Kept(0, 0)), matched(0L -> counted("source"))(0L -> counted("source", by = "region")))

  @Test def operatorsNothingTellsApartAtNoneOfTheirPlacesAreAmbiguous(): Unit =
    assertEquals(Seq(Added(0), Ambiguous(2, Seq(0, 1))),
      matched(0L -> views, 1L -> views)(0L -> dedup("source"), 2L -> views))

  @Test def whatIsNotRecordedIsMatchedByPlaceAsSparkReadsIt(): Unit = {
    assertEquals(Seq(Kept(0, 0), Kept(1, 1)),
      OperatorMatching(Map(0L -> None, 1L -> Some(views)), Map(0L -> Some(clicks), 1L -> None)))
    assertEquals("a meaning recorded without its input moves nowhere: at its place, the place decides",
      Seq(Added(0), Kept(1, 1), Removed(0)),
      matched(0L -> clicks.copy(input = None), 1L -> views.copy(input = None))(0L -> dedup("source"),
        1L -> clicks.copy(input = None)))
  }
}
