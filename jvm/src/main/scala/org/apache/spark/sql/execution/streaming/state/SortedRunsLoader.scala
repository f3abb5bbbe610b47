package org.apache.spark.sql.execution.streaming.state

import java.io.File
import java.nio.file.Files

import scala.collection.mutable.ArrayBuffer

import org.apache.commons.io.FileUtils
import org.rocksdb.{EnvOptions, IngestExternalFileOptions, Options, RocksDB => NativeRocksDB, SstFileWriter}

/**
 * RocksDB's bulk load of entries that arrive as sorted runs: a store an offline job writes anew (each source store
 * is read in RocksDB's key order, so the entries one source sends to this store are a run in that order), and the
 * values an in-place rewrite overwrites as it reads the state in key order (one run, [[StatesnapRewrite]]). Each run is
 * written as an SST file with the store's own options (its table format, bloom filter and compression, as a flush
 * would write it) and ingested into the store's RocksDB before Spark commits it: no memtable, no flush, which cost a
 * store written by puts more than its puts (`make bench`'s repartition). An entry that does not follow its run's last
 * key in RocksDB's bytewise order starts a new run; past `runs` runs, every entry is put instead ([[put]]): a source
 * that is not sorted, or a shuffle that interleaved runs, costs speed, never an entry. Each file lands in level 0,
 * so no more are written than the level-0 file count at which RocksDB compacts (4 by default): a store moved from
 * many partitions does not open with hundreds of level-0 files, and puts the runs past them. Each key is given once
 * (a job's `StoredKeyPlacement`, a rewrite's one pass), so no run holds a key another does, and an ingested file,
 * newer than every entry in the database, shadows the value a rewrite replaces. Not thread-safe: one per task.
 *
 * @param db the native database of the store Spark's provider opened (`StatesnapRewrite.RocksDBWrites.db`): an
 *   ingestion is one call on it, before Spark's commit; @param options the store's RocksDB options
 * @param put how an entry is put when runs are not what arrives
 */
private[state] final class SortedRunsLoader(db: NativeRocksDB, options: Options, runs: Int,
    put: (Array[Byte], Array[Byte]) => Unit) {
  private val maxFiles = math.min(runs, options.level0FileNumCompactionTrigger)
  private val env = new EnvOptions()
  private val dir = Files.createTempDirectory("statesnap-runs-").toFile
  private val files = ArrayBuffer.empty[File]
  private var writer: Option[SstFileWriter] = None
  private var last: Array[Byte] = _

  def add(key: Array[Byte], value: Array[Byte]): Unit = {
    if (writer.nonEmpty && java.util.Arrays.compareUnsigned(last, key) >= 0) finishRun()
    if (writer.isEmpty && files.size < maxFiles) startRun()
    writer match {
      case Some(w) => w.put(key, value); last = key
      case None => put(key, value)
    }
  }

  /** Ingests every run written into the store, each as its own file (runs may overlap each other's key ranges). */
  def ingest(): Unit = {
    finishRun()
    val ingestion = new IngestExternalFileOptions().setMoveFiles(true)
    try files.foreach(f => db.ingestExternalFile(java.util.Collections.singletonList(f.getPath), ingestion))
    finally ingestion.close()
  }

  /** Deletes what was not ingested. */
  def close(): Unit = try writer.foreach(_.close()) finally try env.close() finally FileUtils.deleteQuietly(dir)

  private def startRun(): Unit = {
    val file = new File(dir, s"run-${files.size}.sst")
    val w = new SstFileWriter(env, options)
    w.open(file.getPath)
    writer = Some(w)
    files += file
  }

  private def finishRun(): Unit = writer.foreach { w =>
    writer = None
    try w.finish() finally w.close()
  }
}
