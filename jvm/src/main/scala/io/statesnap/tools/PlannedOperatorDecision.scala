package io.statesnap.tools

import io.statesnap.SparkClasses
import io.statesnap.keys.NewQueryOperators
import io.statesnap.provider.{OperatorStateGuard, StateEncoding, TransformWithStateDecision}
import io.statesnap.registration.QueryRegistrations
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapSparkGlue,
  StatesnapTransformWithStateVariables}

/**
 * The decision the stores of a planned stateful operator make as they open, made before they do, from the plan and
 * the checkpoint: by the driver before a micro-batch's tasks ([[io.statesnap.query.DriverDecision]]) and by a
 * rehearsal of a deploy ([[Rehearsal]]), so both say what the stores then do. Partition 0 stands for every partition:
 * each holds the same records.
 */
object PlannedOperatorDecision {
  /**
   * Decides operator `operatorId` (`writer`, planned) of the query on `checkpoint` as its stores open `version`: throws
   * the refusal they would throw; returns each state that migrates with the changes it makes. None where the plan or
   * the checkpoint does not say enough and the stores decide alone: an operator whose stores' schemas the plan does
   * not give (a session window, a join on 3.5 or of state format 3), transformWithState where its stores are Spark's
   * (4.2+) or where the version its stores load is not the latest committed one.
   */
  def decide(writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Int, query: QueryRegistrations,
      hadoopConf: Configuration, version: Long): Option[Seq[(String, Seq[String])]] = {
    val stateRoot = new Path(new Path(checkpoint), "state").toString
    NewQueryOperators.storeSchemas(writer).map { stores =>
      OperatorStateGuard.decideStores(stateRoot, operatorId, stores, query, hadoopConf, version)
        .map(m => m.state -> m.migration.changes)
    }.orElse(if (!StatesnapSparkGlue.transformWithStateTakesCustomProviders) None else {
      StatesnapTransformWithStateVariables.of(writer).flatMap { variables =>
        // transformWithState keeps its records inside its store, so partition 0's store is read at the latest commit.
        CheckpointReader.recordsInStore(checkpoint, operatorId, 0, CheckpointReader.DefaultStore, hadoopConf)
          .filter(_._1 == version).map { case (_, records) =>
            TransformWithStateDecision.decide(StateStoreId(stateRoot, operatorId, 0), variables, records, query,
              StateEncoding.of(CheckpointReader.avroEncoded(checkpoint, hadoopConf)), version)
          }
      }
    })
  }
}
