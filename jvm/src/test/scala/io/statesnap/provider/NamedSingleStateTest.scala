package io.statesnap.provider

import java.nio.file.{Files, Path => LocalPath}

import scala.collection.mutable.ArrayBuffer

import io.statesnap.StatesnapException
import io.statesnap.registration.QueryStates
import io.statesnap.snapshot.{GroupStateSnapshot, OperatorKind}
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.{After, Test}

/**
 * Which single state a store of another operator holds, from the operator Spark names (its metadata on 4.x, the name
 * statesnap's listener records on 3.5), not from the names in its value schema.
 */
class NamedSingleStateTest {
  private val conf = new Configuration()
  private val key = StructType.fromDDL("k STRING")
  private val groupStateLayout = GroupStateSnapshot.wrap(StructType.fromDDL("n INT"), withTimeout = true)
  private val roots = ArrayBuffer.empty[LocalPath]

  @After def deleteStateRoots(): Unit = roots.foreach(root => FileUtils.deleteDirectory(root.toFile))

  /** A checkpoint's `state` directory whose operator 0 is named `operator` (None: named nowhere yet). */
  private def stateRoot(operator: Option[String]): String = {
    val root = Files.createTempDirectory("statesnap-named-single-state")
    roots += root
    Files.createDirectories(root.resolve("0"))
    operator.foreach(name => QueryStates.recordOperatorNames(root.toUri.toString, Map(0L -> name), conf))
    root.toUri.toString
  }

  /** The single state named from Spark's schema file saying `value`, in a store of operator 0 named `operator`. */
  private def named(operator: Option[String], value: StructType): Option[(String, OperatorKind)] = {
    val id = StateStoreId(stateRoot(operator), 0, 0)
    SparkSingleStateSchemaFile.update(id, key, value, conf)
    SparkSchemaRecords.namedSingleState(id, 1, conf).map(r => (r.stateName, r.operator))
  }

  @Test def theOperatorSparkNamesSaysWhichSingleStateARegistrationNames(): Unit = {
    assertEquals(Some(("groupState", OperatorKind.ArbitraryState)), named(Some("flatMapGroupsWithState"),
      groupStateLayout))
    assertEquals(Some(("groupState", OperatorKind.ArbitraryState)), named(Some("applyInPandasWithState"),
      groupStateLayout))
    assertEquals(Some(("aggregation", OperatorKind.Aggregation)), named(Some("stateStoreSave"),
      StructType.fromDDL("count BIGINT")))
  }

  @Test def aValueInGroupStatesLayoutIsNotGroupStateWhereSparkNamesAnotherOperator(): Unit = {
    assertEquals(None, named(Some("dedupe"), groupStateLayout))
    assertEquals(None, named(Some("symmetricHashJoin"), StructType.fromDDL("count BIGINT")))
  }

  @Test def whereNothingNamesTheOperatorYetGroupStatesLayoutSaysIt(): Unit = {
    assertEquals(Some(("groupState", OperatorKind.ArbitraryState)), named(None, groupStateLayout))
    assertEquals(None, named(None, StructType.fromDDL("count BIGINT")))
  }

  @Test def aLayoutSparkNeverWritesForAnArbitraryStateOperatorIsRefusedNamingTheFile(): Unit = {
    // A bit flipped in `groupState`: not a state of no name, which `check` would report as "no such state".
    val damaged = StructType.fromDDL("groupStatf STRUCT<n: INT>, timeoutTimestamp BIGINT")
    val error = assertThrows(classOf[StatesnapException], () => named(Some("applyInPandasWithState"), damaged))
    assertEquals(StatesnapException.UnreadableCheckpointFile, error.errorClass)
    assertTrue(error.getMessage, error.getMessage.contains("Spark's state schema file") &&
      error.getMessage.contains("/0/0/_metadata/schema") && error.getMessage.contains("groupStatf"))
  }

  @Test def aNameSparkNeverGivesDoesNotOverruleTheLayout(): Unit = {
    // A damaged metadata file (or a later Spark's operator) is not another operator: the layout says group state.
    assertEquals(Some(("groupState", OperatorKind.ArbitraryState)), named(Some("2147483648"), groupStateLayout))
    assertEquals(None, named(Some("2147483648"), StructType.fromDDL("count BIGINT")))
  }
}
