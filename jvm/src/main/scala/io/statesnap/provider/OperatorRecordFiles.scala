package io.statesnap.provider

import io.statesnap.ScalaCompat._
import io.statesnap.CheckpointFile
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * Where statesnap keeps the record of the single state of a store without column families (the stores of
 * operators other than transformWithState): one file per partition, store and state version,
 * `state/<operator>/_statesnap/<partition>-<store>/<version>.snapshot`, in force from that version on. Shared by
 * the provider ([[OperatorStateGuard]]) and the offline tools (`checkpoint.CheckpointReader`).
 */
object OperatorRecordFiles {
  private val Record = """(\d+)\.snapshot""".r

  /** `state/<operator>/_statesnap` of the checkpoint's state root. */
  def root(stateRoot: String, operator: Long): Path = new Path(new Path(stateRoot, operator.toString), "_statesnap")

  /** The records of one partition and store. */
  def dir(root: Path, partition: Int, store: String): Path = new Path(root, s"$partition-$store")

  /** The partition whose records an entry of `root` holds (`<partition>-<store>`, or a legacy file), if it is one. */
  def partitionOf(entry: Path): Option[Int] = entry.getName.takeWhile(_ != '-').toIntOption

  /** Where statesnap 0.1 kept the one record of a partition and store: still read, in force from version 0. */
  def legacy(root: Path, partition: Int, store: String): Path = new Path(root, s"$partition-$store.snapshot")

  def file(dir: Path, version: Long): Path = new Path(dir, s"$version.snapshot")

  /** The versions that have a record in `dir`. */
  def versions(fs: FileSystem, dir: Path): Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.map(_.getPath.getName).collect { case Record(v) => v.toLong }

  /** The bytes of the record file `file`, read as input (a failure names the file). */
  def bytes(fs: FileSystem, file: Path): Array[Byte] = CheckpointFile.read(file, "statesnap's record") {
    val in = fs.open(file)
    try in.readAllBytes() finally in.close()
  }

  /** The record in the file `file`, read as input: any failure names the file. */
  def read(fs: FileSystem, file: Path): StateSnapshotRecord =
    CheckpointFile.read(file, "statesnap's record")(StateSnapshotRecord.fromBytes(bytes(fs, file)))

  /** The record in force at `version`: the one of the highest version not above it, else a legacy one. */
  def inForce(fs: FileSystem, dir: Path, legacy: Path, version: Long): Option[Path] =
    versions(fs, dir).filter(_ <= version).maxOption.map(file(dir, _)).orElse(Some(legacy).filter(fs.exists))
}

/**
 * Where `python -m statesnap migrate` keeps the record of a transformWithState state it migrated on Spark's own
 * provider (whose stores hold no statesnap column family): one file per state and state version,
 * `state/<operator>/_statesnap/transformWithState/<state>/<version>.snapshot`, in force from that version on while
 * Spark's schema files still say the value schema it records (else they win: the state was written anew since).
 */
object MigratedStateRecordFiles {
  def dir(stateRoot: String, operator: Long, state: String): Path =
    new Path(OperatorRecordFiles.root(stateRoot, operator), s"transformWithState/$state")

  def file(stateRoot: String, operator: Long, state: String, version: Long): Path =
    OperatorRecordFiles.file(dir(stateRoot, operator, state), version)

  /** The record of `state` in force at `version`, if migrate wrote one. */
  def inForce(fs: FileSystem, stateRoot: String, operator: Long, state: String, version: Long): Option[Path] =
    OperatorRecordFiles.versions(fs, dir(stateRoot, operator, state)).filter(_ <= version).maxOption
      .map(file(stateRoot, operator, state, _))

  /** Every record written for `version` (an interrupted migrate's, to roll back). */
  def ofVersion(fs: FileSystem, stateRoot: String, operator: Long, version: Long): Seq[Path] = {
    val states = new Path(OperatorRecordFiles.root(stateRoot, operator), "transformWithState")
    if (!fs.exists(states)) Nil
    else fs.listStatus(states).toSeq.map(s => OperatorRecordFiles.file(s.getPath, version)).filter(fs.exists)
  }
}

/**
 * Where `python -m statesnap adopt --written-as` keeps the layout in which a deploy with Spark's schema check off
 * wrote some entries of a transformWithState state, beside the layout Spark's files record for the others: a record
 * of it per state, `state/<operator>/_statesnap/writtenAs/<state>/<version>.snapshot`, in force from the version
 * adopt scanned while statesnap holds no record of the state; its first migration converts each entry from the
 * layout it is in, and records the state.
 */
object WrittenAsRecordFiles {
  /** Every state's, of one operator. */
  def root(stateRoot: String, operator: Long): Path = new Path(OperatorRecordFiles.root(stateRoot, operator), "writtenAs")

  def dir(stateRoot: String, operator: Long, state: String): Path = new Path(root(stateRoot, operator), state)

  def file(stateRoot: String, operator: Long, state: String, version: Long): Path =
    OperatorRecordFiles.file(dir(stateRoot, operator, state), version)

  /** The record of `state` in force at `version`, if adopt wrote one. */
  def inForce(fs: FileSystem, stateRoot: String, operator: Long, state: String, version: Long): Option[Path] =
    OperatorRecordFiles.versions(fs, dir(stateRoot, operator, state)).filter(_ <= version).maxOption
      .map(file(stateRoot, operator, state, _))

  /**
   * The layout recorded for `state` in force at `version`, read as input; the store and `check` read it alike, while
   * statesnap holds no record of the state. @throws StatesnapException naming the file if it cannot be read
   */
  def recordInForce(fs: FileSystem, stateRoot: String, operator: Long, state: String,
      version: Long): Option[StateSnapshotRecord] =
    inForce(fs, stateRoot, operator, state, version).map(OperatorRecordFiles.read(fs, _))
}
