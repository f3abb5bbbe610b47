package io.statesnap.checkpoint

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import org.apache.hadoop.fs.Path

/**
 * The errors of reading a checkpoint (a path that is none, a file system missing, a lease statesnap did not write),
 * each built here with its error class, as the stores' are in `provider.StoreErrors`. A verb's refusal of a
 * checkpoint it could read is worded in [[CheckpointRefusals]].
 */
private[statesnap] object CheckpointErrors {
  def noCheckpoint(checkpoint: String): StatesnapException =
    new StatesnapException(InvalidArgument, s"no checkpoint at $checkpoint: the path does not exist")

  /** @param verb what the caller was asked to do with it, if anything ("repartition") */
  def notACheckpoint(checkpoint: String, verb: Option[String]): StatesnapException =
    new StatesnapException(InvalidArgument, verb.fold("")(v => s"cannot $v: ") + s"$checkpoint is not a streaming " +
      "query's checkpointLocation: it has no offsets/ directory (or the query never started a batch). Nothing was " +
      "changed.")

  def noFileSystem(path: Path, why: String, cause: Throwable): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"cannot open $path: no Hadoop FileSystem for its scheme " +
      s"'${path.toUri.getScheme}' on this classpath (add its connector's jar, e.g. hadoop-aws for s3a): $why", cause)

  def notALease(file: Path): StatesnapException = new StatesnapException(UnreadableCheckpointFile, s"$file is not a " +
    "lease statesnap wrote: remove it if no query runs on the checkpoint")
}
