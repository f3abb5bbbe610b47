package io.statesnap.registration

import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.types.StructType

/**
 * A stateful operator as Spark names it (its `shortName`: in the operator metadata Spark's driver writes on 4.x, or
 * in the name statesnap's listener records on 3.5), read once per store ([[QueryStates.operator]]) and carried as
 * this type. The one place a Spark operator name means something to statesnap: which operators hold a single
 * state a registration can name, and so migrate, and which key layout each operator's stores have
 * (`placement.PartitionKey`).
 */
sealed trait SparkOperator

object SparkOperator {
  /** An operator whose one state a registration names, and that migrates when its layout changes. */
  sealed abstract class SingleState(val stateName: String) extends SparkOperator

  /** A streaming aggregation (`stateStoreSave`): its buffers, registered as `aggregation`. */
  case object Aggregation extends SingleState("aggregation")

  /** (flat)MapGroupsWithState and applyInPandasWithState: Spark's group-state layout around the user's state. */
  case object ArbitraryState extends SingleState(GroupStateSnapshot.StateField)

  /** Another stateful operator Spark has: none holds a single state a registration names. */
  sealed abstract class Other(val name: String) extends SparkOperator

  /** dropDuplicates (`dedupe`). */
  case object Dedup extends Other("dedupe")

  /** dropDuplicatesWithinWatermark. */
  case object DedupWithinWatermark extends Other("dedupeWithinWatermark")

  /** A session window aggregation: its store's key is the grouping key and the session's start. */
  case object SessionWindow extends Other("sessionWindowStateStoreSaveExec")

  /** A stream-stream join: four stores per partition (or four column families), each side keyed by its join keys. */
  case object StreamStreamJoin extends Other("symmetricHashJoin") {
    private val counts = "keyToNumValues"
    private val rows = "keyWithIndexToValue"

    /**
     * Its stores (or, in state format 3, column families) in Spark's order, which is also where each store's id sits
     * among its partition's in a commit of checkpoint format v2: each side's key to its count of rows, and its key
     * with a row's index to the row. The same from Spark 3.5 to 4.3.
     */
    val stores: Seq[String] = for (side <- Seq("left", "right"); store <- Seq(counts, rows)) yield s"$side-$store"

    def isStore(name: String): Boolean = stores.contains(name)

    /** Whether store `name` is a side's key with a row's index to the row. */
    def keepsRows(name: String): Boolean = isStore(name) && name.endsWith(rows)

    /** Whether store `name` is a side's key to its count of rows. */
    def keepsCounts(name: String): Boolean = isStore(name) && name.endsWith(counts)
  }

  /** A streaming limit: one count, in partition 0. */
  case object GlobalLimit extends Other("globalLimit")

  /** transformWithState, in Scala or Python (whose name differs by minor). */
  final case class TransformWithState(override val name: String) extends Other(name)

  /** A name no stateful operator of Spark 3.5 to 4.3 has: a damaged file, or an operator of a later Spark. */
  final case class Unknown(name: String) extends SparkOperator

  /** The operator Spark calls `shortName` (its names from 3.5 to 4.3, read from their jars). */
  def named(shortName: String): SparkOperator = shortName match {
    case "stateStoreSave" => Aggregation
    case "flatMapGroupsWithState" | "applyInPandasWithState" => ArbitraryState
    case Dedup.name => Dedup
    case DedupWithinWatermark.name => DedupWithinWatermark
    case SessionWindow.name => SessionWindow
    case StreamStreamJoin.name => StreamStreamJoin
    case GlobalLimit.name => GlobalLimit
    case "transformWithStateExec" | "transformWithStateInPandasExec" | "transformWithStateInPySparkExec" =>
      TransformWithState(shortName)
    case other => Unknown(other)
  }

  /**
   * Whether a store whose values have `valueSchema` holds group state: values in Spark's group-state layout
   * (`struct<groupState, timeoutTimestamp>`), unless Spark names the operator as another it has (a dedup or a join
   * whose values happen to have that shape). Where nothing or no name Spark gives names it (a query's first run on
   * 3.5, a damaged metadata file) the layout alone tells, as the entries are each checked against it when they are
   * converted. `operator` is read only for such a layout.
   */
  def holdsGroupState(valueSchema: StructType, operator: => Option[SparkOperator]): Boolean =
    GroupStateSnapshot.unwrap(valueSchema).isDefined && !operator.exists(_.isInstanceOf[Other])

  /** The names a registration can give a single state. */
  val singleStates: Set[String] = Set(Aggregation.stateName, ArbitraryState.stateName)
}
