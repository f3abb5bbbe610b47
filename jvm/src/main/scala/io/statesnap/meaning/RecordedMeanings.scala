package io.statesnap.meaning

import io.statesnap.{CheckpointFile, CheckpointTextFile}
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * What each stateful operator's state means, kept beside it: `state/<operator>/_statesnap/meaning/<version>.json`,
 * in force from that state version on. Partition 0's store writes it after its commit of the first version the
 * meaning holds (the first batch of a deploy that changes it, or of an older checkpoint that had none), as it writes
 * its schema record: a batch that does not commit leaves nothing in force, since a load of an earlier version reads
 * the meaning in force then, and the next commit replaces any later file. A tool that appends a version under
 * another key (`change_key`) writes it with that version.
 */
object RecordedMeanings {
  private val File = """(\d+)\.json""".r

  def dir(stateRoot: String, operatorId: Long): Path =
    new Path(new Path(new Path(new Path(stateRoot), operatorId.toString), "_statesnap"), "meaning")

  /** The meaning of operator `operatorId` in force from `version` on. */
  def file(stateRoot: String, operatorId: Long, version: Long): Path =
    new Path(dir(stateRoot, operatorId), s"$version.json")

  /** The meaning in force at `version` of operator `operatorId` under `stateRoot`, and the version it is from. */
  def inForce(stateRoot: String, operatorId: Long, version: Long,
      hadoopConf: Configuration): Option[(Long, OperatorMeaning)] = {
    versions(dir(stateRoot, operatorId), hadoopConf).filter(_ <= version).lastOption
      .map(v => v -> read(file(stateRoot, operatorId, v), hadoopConf))
  }

  /** Records `meaning` in force from `version` on, and removes any recorded for a later version (never committed). */
  def write(stateRoot: String, operatorId: Long, version: Long, meaning: OperatorMeaning,
      hadoopConf: Configuration): Path = {
    val at = dir(stateRoot, operatorId)
    val written = file(stateRoot, operatorId, version)
    CheckpointTextFile.write(written, meaning.toJson, hadoopConf)
    val fm = CheckpointFileManager.create(at, hadoopConf)
    versions(at, hadoopConf).filter(_ > version).foreach(v => fm.delete(file(stateRoot, operatorId, v)))
    written
  }

  private def versions(at: Path, hadoopConf: Configuration): Seq[Long] = {
    val fs = at.getFileSystem(hadoopConf)
    if (!fs.exists(at)) Nil
    else fs.listStatus(at).map(_.getPath.getName).collect { case File(v) => v.toLong }.toSeq.sorted
  }

  private def read(file: Path, hadoopConf: Configuration): OperatorMeaning =
    CheckpointFile.read(file, s"statesnap's record of what the state of an operator means")(
      OperatorMeaning.parse(CheckpointTextFile.read(file, hadoopConf).getOrElse(
        throw CheckpointFile.malformed("it is gone"))))
}
