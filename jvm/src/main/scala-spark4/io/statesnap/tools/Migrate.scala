package io.statesnap.tools

import scala.jdk.CollectionConverters._

import io.statesnap.StatesnapException
import io.statesnap.bridge.{ApplicationSqlSettings, CompatibilityCheck}
import io.statesnap.provider.{DeclaredSnapshots, StateDecision, StateEncoding}
import io.statesnap.registration.MapMerge
import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.{DataType, StructType}
import org.json4s.jackson.JsonMethods

import OfflineMigration.{describe, migrateStates, Decided}

/**
 * `python -m statesnap migrate`: the eager migration of transformWithState states of a stopped query on Spark's own
 * RocksDB provider (Spark 4.2+), each declared by its schema or definition, in one appended batch
 * ([[OfflineMigration]]).
 */
object Migrate {
  /**
   * @param states the state variables to migrate, each once, all of one transformWithState operator
   * @param valueJsons the value schema the new application version declares for each (Spark JSON)
   * @param definitionJsons the definition it registers for each (`RowSnapshot.to_json`), or null
   * @param userKeyJsons for a map, the user key schema it declares (Spark JSON), or null: as recorded
   * @param mapKeyJsons for a map, the definition it registers for the map's key, or null
   * @param mergeJsons for a map whose entries meet under one new user key, the merge it registers (JSON: a SQL
   *   expression over the two values `a` and `b` by field of the value), or null
   * @param mode the compatibility mode it sets, or null
   * @param sqlConf the application's SQL settings, as Spark confs ([[ApplicationSqlSettings]]; may be empty): the
   *   rules run under them and the migrated records keep them
   * @param fileSink the output path of the query's file sink, or null
   * @param noFileSink the query writes to another sink, which keeps no log of batches ([[QuerySink]])
   */
  def run(spark: SparkSession, location: String, states: java.util.List[String],
      valueJsons: java.util.List[String], definitionJsons: java.util.List[String],
      userKeyJsons: java.util.List[String], mapKeyJsons: java.util.List[String],
      mergeJsons: java.util.List[String], mode: String,
      sqlConf: java.util.Map[String, String], fileSink: String, noFileSink: Boolean, dryRun: Boolean): ToolReport = {
    val names = states.asScala.toSeq
    require(names.nonEmpty && Seq(valueJsons, definitionJsons, userKeyJsons, mapKeyJsons, mergeJsons)
      .forall(_.size == names.size), "migrate takes one value schema, definition, user key, map key definition and " +
      "merge (or null) per state")
    names.diff(names.distinct).headOption.foreach(n => throw ToolErrors.stateNamedTwice(n))
    migrateStates(spark, location, names, fileSink, noFileSink, dryRun) { (checkpoint, target) =>
      target.states.indices.map { i =>
        val (t, definitionJson) = (target.states(i), definitionJsons.get(i))
        val sql = ApplicationSqlSettings(t.recorded, sqlConf.asScala.toMap)
        val declared = CompatibilityCheck.declare(t.recorded, None, None, Option(userKeyJsons.get(i)).map(structOf),
          structOf(valueJsons.get(i)), Option(definitionJson), Option(mode), sql.settings, Option(mapKeyJsons.get(i)))
        val verdict = CompatibilityCheck.verdict(t.recorded, declared, StateEncoding.of(target.avro), location)
        val merge = Option(mergeJsons.get(i)).map(json => MapMerge(MapMerge.fieldsOf(JsonMethods.parse(json))
          .fold(why => throw ToolErrors.invalidMerge(t.recorded.stateName, why), identity), sql.settings))
        // A merge applies where a map's entries get new keys; given again once they have them (migrate run again
        // after it finished), it applies to nothing.
        if (merge.nonEmpty && t.recorded.kind != StateKind.Map) checkpoint.refuse(
          MigrateRefusals.mergeOfNoMap(t.name, t.recorded.kind.name))
        verdict.decided match {
          case StateDecision.Migrate(_, _, Some(_)) => merge.foreach { m =>
            try DeclaredSnapshots.mapMerge(t.name, m, StateDecision.schemaOf(declared.valueSnapshot)) catch {
              case e: StatesnapException => checkpoint.refuse(e.getMessage)
            }
          }
          case _ =>
        }
        val decided = Decided(t, declared, verdict, merge)
        decided -> (describe(target, decided) ++ sql.note(t.name, Option(definitionJson)).map("  " + _))
      }
    }
  }

  private def structOf(json: String): StructType = DataType.fromJson(json).asInstanceOf[StructType]
}
