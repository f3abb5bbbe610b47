package io.statesnap.registration

import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.types.StructType

/**
 * A stateful operator as Spark names it (its `shortName`: in the operator metadata Spark's driver writes on 4.x, or
 * in the name statesnap's listener records on 3.5), read once per store ([[QueryStates.operator]]) and carried as
 * this type. The one place a Spark operator name means something to statesnap: which operators hold a single
 * state a registration can name, and so migrate.
 */
sealed trait SparkOperator

object SparkOperator {
  /** An operator whose one state a registration names, and that migrates when its layout changes. */
  sealed abstract class SingleState(val stateName: String) extends SparkOperator

  /** A streaming aggregation (`stateStoreSave`): its buffers, registered as `aggregation`. */
  case object Aggregation extends SingleState("aggregation")

  /** (flat)MapGroupsWithState and applyInPandasWithState: Spark's group-state layout around the user's state. */
  case object ArbitraryState extends SingleState(GroupStateSnapshot.StateField)

  /** Any other stateful operator (dedup, joins, session windows, limits, transformWithState), by Spark's name. */
  final case class Other(name: String) extends SparkOperator

  /** The operator Spark calls `shortName`. */
  def named(shortName: String): SparkOperator = shortName match {
    case "stateStoreSave" => Aggregation
    case "flatMapGroupsWithState" | "applyInPandasWithState" => ArbitraryState
    case other => Other(other)
  }

  /**
   * Whether a store whose values have `valueSchema` holds group state: values in Spark's group-state layout
   * (`struct<groupState, timeoutTimestamp>`) in a store of an operator Spark names an arbitrary-state one, or that
   * nothing names yet (a query's first run on 3.5, where the layout alone tells). `operator` is read only for such a
   * layout.
   */
  def holdsGroupState(valueSchema: StructType, operator: => Option[SparkOperator]): Boolean =
    GroupStateSnapshot.unwrap(valueSchema).isDefined && operator.forall(_ == ArbitraryState)

  /** The names a registration can give a single state. */
  val singleStates: Set[String] = Set(Aggregation.stateName, ArbitraryState.stateName)
}
