package io.statesnap.registration

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => LocalPath}
import java.util.UUID

import io.statesnap.StatesnapException
import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.junit.Assert._
import org.junit.Test

/**
 * Operator names and the check of registrations, where Spark writes operator metadata (4.x) and where only
 * statesnap's listener records the names (3.5).
 */
class QueryStatesTest {
  private val conf = new Configuration()

  private def stateRoot(): LocalPath = TempDirs.create("statesnap-query-states")

  /** Spark's operator metadata (v1) naming operator `id` `name`: a version line, then the JSON. */
  private def sparkMetadata(root: LocalPath, id: Long, name: String): Unit = {
    val dir = Files.createDirectories(root.resolve(s"$id/_metadata"))
    Files.write(dir.resolve("metadata"), ("v1\n" + s"""{"operatorInfo":{"operatorId":$id,"operatorName":"$name"},""" +
      """"stateStoreInfo":[]}""").getBytes(UTF_8))
  }

  private def verify(root: LocalPath, registered: String*): Unit =
    QueryStates.verify(registered.toSet, root.toUri.toString, UUID.randomUUID().toString, 1L, conf, "ck")

  /** What Spark's check of a restart reads: its own metadata only (v1, or v2's latest for transformWithState). */
  @Test def sparksOperatorNamesAreItsMetadatasAlone(): Unit = {
    val root = stateRoot()
    sparkMetadata(root, 0, "stateStoreSave")
    val v2 = Files.createDirectories(root.resolve("1/_metadata/v2"))
    Seq(0 -> "dedupe", 3 -> "transformWithStateInPySparkExec").foreach { case (batch, name) =>
      Files.write(v2.resolve(batch.toString), ("v2\n" + s"""{"operatorInfo":{"operatorId":1,"operatorName":"$name"}}""")
        .getBytes(UTF_8))
    }
    QueryStates.recordOperatorNames(root.toUri.toString, Map(2L -> "dedupe"), conf) // statesnap's, on 3.5
    assertEquals(Map(0L -> "stateStoreSave", 1L -> "transformWithStateInPySparkExec"),
      QueryStates.sparkOperatorNames(root.toUri.toString, conf))
  }

  @Test def aRecordedNameStandsInWhereSparkWroteNoMetadata(): Unit = {
    val root = stateRoot()
    Files.createDirectories(root.resolve("0"))
    assertEquals(None, QueryStates.operator(root.toUri.toString, 0, conf))
    QueryStates.recordOperatorNames(root.toUri.toString, Map(0L -> "stateStoreSave"), conf)
    assertEquals(Some(SparkOperator.Aggregation), QueryStates.operator(root.toUri.toString, 0, conf))
    sparkMetadata(root, 0, "flatMapGroupsWithState")
    assertEquals(Some(SparkOperator.ArbitraryState), QueryStates.operator(root.toUri.toString, 0, conf))
    sparkMetadata(root, 0, "dedupe")
    assertEquals(Some(SparkOperator.Dedup), QueryStates.operator(root.toUri.toString, 0, conf))
  }

  @Test def withSparksMetadataEveryRegistrationNamesAStateOfTheQuery(): Unit = {
    val root = stateRoot()
    sparkMetadata(root, 0, "flatMapGroupsWithState")
    verify(root, "groupState")
    assertThrows(classOf[StatesnapException], () => verify(root, SparkOperator.Aggregation.stateName))
  }

  @Test def withoutItOnlyASingleStatesNameIsAcceptedUnchecked(): Unit = {
    val root = stateRoot()
    Files.createDirectories(root.resolve("0"))
    verify(root, "groupState", SparkOperator.Aggregation.stateName)
    assertThrows(classOf[StatesnapException], () => verify(root, "grupState"))
  }
}
