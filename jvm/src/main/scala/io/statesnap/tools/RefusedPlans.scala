package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.ScalaCompat._
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * Batches Spark planned and then refused before running any of it: Spark writes a batch's offsets before it plans
 * the batch, so a restart its state schema check refuses leaves `offsets/<N+1>` without a commit, and the tool that
 * makes the change (`migrate` for a value, `change-key` for a key; each appends batch N+1 itself) would refuse the
 * checkpoint as one whose query may still be running. statesnap's listener, which saw the refusal (at planning, so
 * neither state, sink nor operator metadata was written for the batch), records it here,
 * `<checkpoint>/_statesnap/refused-plans/<batch>`; the tool then removes that batch's offsets ([[removed]]), after
 * checking that nothing of the batch ran, and the query plans it again after the tool's batch.
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

  /**
   * Removes the latest batch of `checkpoint` (on a dry run: says it would) if Spark planned and refused it, as the
   * listener recorded, and nothing of it ran: no commit, no state version of it in any store, no operator metadata.
   * @return what was done, if anything
   */
  def removed(checkpoint: StoppedCheckpoint, dryRun: Boolean): Option[String] = {
    val batch = checkpoint.latestBatch
    Option.when(refusedAtPlanning(checkpoint, batch)) {
      if (!dryRun) {
        checkpoint.delete(checkpoint.offsetsFile(batch))
        checkpoint.delete(new Path(dir(checkpoint.root), batch.toString))
      }
      s"removed batch $batch, which Spark planned and then refused before running any of it (a restart with the " +
        "changed state schema or key): the query plans it again, over the same input, after this batch"
    }
  }

  private def refusedAtPlanning(checkpoint: StoppedCheckpoint, batch: Long): Boolean =
    !checkpoint.committed(batch) && checkpoint.fs.exists(new Path(dir(checkpoint.root), batch.toString)) && {
      val stateRoot = new Path(checkpoint.root, "state")
      val (transformWithState, others) = checkpoint.operators
      (transformWithState ++ others).forall { op =>
        !checkpoint.fs.exists(new Path(stateRoot, s"$op/_metadata/v2/$batch")) && checkpoint.partitions(op).forall {
          p => !checkpoint.fs.listStatus(new Path(stateRoot, s"$op/$p")).exists(f =>
            StoppedCheckpoint.isVersionFile(f.getPath.getName, batch + 1))
        }
      }
    }

  private def batches(fs: FileSystem, log: Path): Seq[Long] =
    if (!fs.exists(log)) Nil else fs.listStatus(log).toSeq.flatMap(_.getPath.getName.toLongOption)
}
