package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.ScalaCompat._
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * Batches Spark planned and then refused before running any of it: Spark writes a batch's offsets before it plans
 * the batch, so a restart its state schema check refuses leaves `offsets/<N+1>` without a commit, and `migrate`
 * (which appends batch N+1 itself) would refuse the checkpoint as one whose query may still be running. statesnap's
 * listener, which saw the refusal (at planning, so neither state, sink nor operator metadata was written for the
 * batch), records it here, `<checkpoint>/_statesnap/refused-plans/<batch>`; `migrate` then removes that batch's
 * offsets, after checking that nothing of the batch ran, and the query plans it again after the migration.
 */
object RefusedPlans {
  private def dir(checkpoint: Path): Path = new Path(checkpoint, "_statesnap/refused-plans")

  /**
   * Records the latest batch of the checkpoint of a query whose run `runId` Spark refused at planning, if that batch
   * has no commit. @return the batch recorded
   */
  def record(checkpoint: String, runId: String, hadoopConf: Configuration): Option[Long] = {
    val root = new Path(checkpoint)
    val fs = root.getFileSystem(hadoopConf)
    batches(fs, new Path(root, "offsets")).maxOption.filterNot(batches(fs, new Path(root, "commits")).contains)
      .map { batch =>
        val fm = CheckpointFileManager.create(root, hadoopConf)
        fm.mkdirs(dir(root))
        val out = fm.createAtomic(new Path(dir(root), batch.toString), overwriteIfPossible = true)
        try out.write(s"run $runId: Spark refused the batch at planning (its state schema check)\n".getBytes(UTF_8))
        catch { case e: Throwable => out.cancel(); throw e }
        out.close()
        batch
      }
  }

  /** Whether the listener recorded that Spark refused `batch` of the checkpoint at `root` at planning. */
  def recorded(fs: FileSystem, root: Path, batch: Long): Boolean = fs.exists(new Path(dir(root), batch.toString))

  /** The record of `batch`, once the batch is gone. */
  def file(root: Path, batch: Long): Path = new Path(dir(root), batch.toString)

  private def batches(fs: FileSystem, log: Path): Seq[Long] =
    if (!fs.exists(log)) Nil else fs.listStatus(log).toSeq.flatMap(_.getPath.getName.toLongOption)
}
