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

  @Test def operatorsThatComputeTheSameAreToldApartByTheirPlacesOnlyWhereNothingMoved(): Unit = {
    val (a, b) = (dedup("source"), dedup("source")) // a union's two sources, deduplicated alike
    assertEquals("nothing moved", Seq(Kept(0, 0), Kept(1, 1)), matched(0L -> a, 1L -> b)(0L -> a, 1L -> b))
    assertEquals("an aggregation added above them: taking the one at 1 for its own would give it the other's",
      Seq(Added(0), Ambiguous(1, Seq(0, 1)), Ambiguous(2, Seq(0, 1))),
      matched(0L -> a, 1L -> b)(0L -> counted("union(dropDuplicates by `id`; dropDuplicates by `id`)"), 1L -> a,
        2L -> b))
    assertEquals("one removed: which one, nothing says", Seq(Ambiguous(0, Seq(0, 1))),
      matched(0L -> a, 1L -> b)(0L -> a))
    assertEquals("a dedup inserted below the first: the one fed anew at 0 is not taken for its place's by that alone",
      Seq(Added(0), Added(1), Ambiguous(2, Seq(0, 1))),
      matched(0L -> a, 1L -> b)(0L -> dedup("dropDuplicates by `x`"), 1L -> dedup("source").copy(key = key("x")),
        2L -> b))
  }

  @Test def namesTellApartOperatorsThatComputeTheSame(): Unit = {
    def named(m: OperatorMeaning, name: String) = m.copy(name = Some(name))
    val (a, b) = (named(dedup("source"), "a"), named(dedup("source"), "b"))
    assertEquals(Seq(Added(0), Kept(0, 1), Kept(1, 2)),
      matched(0L -> a, 1L -> b)(0L -> counted("union(dropDuplicates by `id`; dropDuplicates by `id`)"), 1L -> a,
        2L -> b))
    assertEquals("swapped", Seq(Kept(1, 0), Kept(0, 1)), matched(0L -> a, 1L -> b)(0L -> b, 1L -> a))
    assertEquals("named whatever feeds it", Seq(Kept(1, 0), Added(1), Removed(0)),
      matched(0L -> a, 1L -> b)(0L -> named(dedup("where (x > 1)"), "b"), 1L -> named(dedup("source"), "c")))
    assertEquals("another name at its place is another operator", Seq(Added(0), Removed(0)),
      matched(0L -> a)(0L -> named(dedup("source"), "c")))
    assertEquals("a name given in the new version only: matched as without", Seq(Kept(0, 0), Kept(1, 1)),
      matched(0L -> dedup("source"), 1L -> clicks)(0L -> a, 1L -> named(clicks, "clicks")))
  }

  @Test def whatIsNotRecordedIsMatchedByPlaceAsSparkReadsIt(): Unit = {
    assertEquals(Seq(Kept(0, 0), Kept(1, 1)),
      OperatorMatching(Map(0L -> None, 1L -> Some(views)), Map(0L -> Some(clicks), 1L -> None)))
    assertEquals("a meaning recorded without its input moves nowhere: at its place, the place decides",
      Seq(Added(0), Kept(1, 1), Removed(0)),
      matched(0L -> clicks.copy(input = None), 1L -> views.copy(input = None))(0L -> dedup("source"),
        1L -> clicks.copy(input = None)))
  }
}
