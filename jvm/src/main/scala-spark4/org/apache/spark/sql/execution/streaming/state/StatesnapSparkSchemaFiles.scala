package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import io.statesnap.CheckpointFile
import io.statesnap.snapshot.{MapStateKey, StateKind}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.spark.sql.types.StructType
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * Spark's own state schema files and operator metadata of transformWithState operators (of the others:
 * [[SparkSingleStateSchemaFile]]), read and written with Spark's own readers and writers:
 * what Spark's driver recorded for a state before statesnap kept a record of its own (or after it was lost),
 * and, after statesnap changed a state's layout, what Spark's own tools (`format("statestore")`, the state
 * schema check) must read instead of the stale schema Spark recorded with its check off.
 */
object StatesnapSparkSchemaFiles {
  /**
   * A column family as a transformWithState store was asked to create it in this version; in an Avro-encoded store,
   * with the value schema id its entries are written under ([[StatesnapAvroSchemas.target]]), which Spark's files
   * must give `valueSchema`.
   */
  final case class Family(name: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      avroSchemaId: Option[Short] = None)

  /**
   * Makes Spark's files for a transformWithState operator say the schemas the families have in batch `batchId`,
   * where Spark's driver wrote them in that batch (the first batch of a query run): if a family's value schema
   * differs from the schema file the batch's operator metadata (`_metadata/v2/<batch>`) names last, or a family
   * is missing from it, a new v3 schema file (`_stateSchema/<store>/<batch>_<uuid>`, a value schema id one up for
   * each changed family, as Spark's own evolution counts) is written, and the metadata is rewritten to name it
   * last. Of keys, only a map's user key changes here (statesnap moved its entries); every other key change is
   * refused before.
   * @return the new schema file, if one was written
   */
  def updateTransformWithState(id: StateStoreId, batchId: Long, families: Seq[Family],
      hadoopConf: Configuration): Option[Path] = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    if (!fm.exists(OperatorStateMetadataV2.metadataFilePath(operatorDir, batchId))) None
    else withSchemaFile(id, batchId, batchId, families, hadoopConf)
  }

  /**
   * For a batch statesnap appends to a stopped query (`python -m statesnap migrate`): Spark's files for batch
   * `batchId` as the driver writes them in a run's first batch, the operator metadata of the newest batch before
   * it copied to `_metadata/v2/<batchId>`, naming last a new schema file that says `families` (written even if
   * nothing changed, so the batch reads like any run's first). @return the schema file
   */
  def appendTransformWithStateBatch(id: StateStoreId, batchId: Long, families: Seq[Family],
      hadoopConf: Configuration): Path = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    val from = metadataBatches(fm, operatorDir).filter(_ < batchId).maxOption.getOrElse(throw new
        IllegalStateException(s"$operatorDir has no transformWithState operator metadata before batch $batchId"))
    withSchemaFile(id, from, batchId, families, hadoopConf, always = true).get
  }

  /** Removes what [[appendTransformWithStateBatch]] wrote for `batchId` (an interrupted migrate rolled back). */
  def removeTransformWithStateBatch(id: StateStoreId, batchId: Long, hadoopConf: Configuration): Unit = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    val schemaDir = new Path(new Path(operatorDir, "_stateSchema"), id.storeName)
    val schemaFiles = if (!fm.exists(schemaDir)) Nil
      else fm.list(schemaDir).toSeq.map(_.getPath).filter(_.getName.startsWith(s"${batchId}_"))
    (schemaFiles :+ OperatorStateMetadataV2.metadataFilePath(operatorDir, batchId)).filter(fm.exists).foreach(fm.delete)
  }

  /**
   * The user state variables a transformWithState operator declared in the newest batch up to `batchId` (Spark's
   * operator properties, `stateVariables`), by name, of the kind their `stateVariableType` says. Spark lists its
   * timers' column family there too (`TimerState`): internal, never a user's state, so left out. A type statesnap does
   * not know fails the read (the file names it) rather than be read as a value.
   */
  def transformWithStateVariables(checkpointRoot: String, operatorId: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, StateKind] = {
    val operatorDir = new Path(checkpointRoot, operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    metadataBatches(fm, operatorDir).filter(_ <= batchId).maxOption.toSeq.flatMap { b =>
      val path = OperatorStateMetadataV2.metadataFilePath(operatorDir, b)
      val properties = readMetadataV2(fm, path).operatorPropertiesJson
      CheckpointFile.read(path, "Spark's operator metadata") {
        for {
          JArray(variables) <- Seq(JsonMethods.parse(properties) \ "stateVariables")
          variable <- variables
          JString(name) <- Seq(variable \ "stateName")
          JString(kind) <- Seq(variable \ "stateVariableType")
          userKind <- variableKind(name, kind)
        } yield name -> userKind
      }
    }.toMap
  }

  /** The kind of a user state Spark's `StateVariableType` names, or None for its timers. */
  private[state] def variableKind(name: String, sparkType: String): Option[StateKind] = sparkType match {
    case "ValueState" => Some(StateKind.Value)
    case "ListState" => Some(StateKind.List)
    case "MapState" => Some(StateKind.Map)
    case "TimerState" => None
    case other => throw SparkBuildErrors.unknownVariableType(name, other)
  }

  /**
   * Writes a new v3 schema file for `families` (a value schema id one up for each changed family, as Spark's own
   * evolution counts) and `_metadata/v2/<toBatch>` = the metadata of `fromBatch` naming it last; nothing if no
   * family changed, unless `always`.
   */
  private def withSchemaFile(id: StateStoreId, fromBatch: Long, toBatch: Long, families: Seq[Family],
      hadoopConf: Configuration, always: Boolean = false): Option[Path] = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    val metadata = readMetadataV2(fm, OperatorStateMetadataV2.metadataFilePath(operatorDir, fromBatch))
    val paths = schemaFilePaths(metadata, id.storeName)
    val recorded = lastSchemaFile(fm, paths)
    val updated = families.foldLeft(recorded)(withFamily)
    if (updated == recorded && !always) return None
    val newFile = new Path(new Path(new Path(operatorDir, "_stateSchema"), id.storeName),
      s"${toBatch}_${UUID.randomUUID()}")
    fm.mkdirs(newFile.getParent)
    writeSchemaFile(fm, newFile, updated.sortBy(_.colFamilyName), StateSchemaCompatibilityChecker.SCHEMA_FORMAT_V3,
      overwrite = false)
    val named = metadata.copy(stateStoreInfo = metadata.stateStoreInfo.map { s =>
      if (s.storeName == id.storeName) s.copy(stateSchemaFilePaths = s.stateSchemaFilePaths :+ newFile.toString) else s
    })
    val metadataPath = OperatorStateMetadataV2.metadataFilePath(operatorDir, toBatch)
    OperatorStateMetadataUtils.writeMetadata(fm.createAtomic(metadataPath, overwriteIfPossible = true), named,
      metadataPath)
    Some(newFile)
  }

  private def metadataBatches(fm: CheckpointFileManager, operatorDir: Path): Seq[Long] = {
    val dir = new Path(operatorDir, "_metadata/v2")
    if (!fm.exists(dir)) Nil else fm.list(dir).toSeq.flatMap(_.getPath.getName.toLongOption)
  }


  /**
   * The column families Spark's files say a transformWithState store has in batch `batchId` (the schema file
   * named last by the newest operator metadata up to that batch), by name. A map state's key is the store's
   * composite `struct<key, userKey>`, its user key named apart. Empty when Spark wrote no operator metadata up to
   * that batch.
   */
  def transformWithStateFamilies(id: StateStoreId, batchId: Long,
      hadoopConf: Configuration): Map[String, StateStoreColFamilySchema] = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    metadataBatches(fm, operatorDir).filter(_ <= batchId).maxOption.toSeq.flatMap { b =>
      lastSchemaFile(fm, schemaFilePaths(readMetadataV2(fm, OperatorStateMetadataV2.metadataFilePath(operatorDir, b)),
        id.storeName))
    }.map(s => s.colFamilyName -> s).toMap
  }

  /**
   * The schema of every id Spark's files give each column family of a transformWithState store in batch `batchId`
   * (every schema file the newest operator metadata up to that batch names, a later file's id overriding an earlier
   * one's), as Spark's driver builds them for its Avro encoders: for a store loaded outside a query (`migrate`).
   */
  def avroSchemaProvider(id: StateStoreId, batchId: Long, hadoopConf: Configuration): StateSchemaProvider = {
    val operatorDir = new Path(id.checkpointRootLocation, id.operatorId.toString)
    val fm = CheckpointFileManager.create(operatorDir, hadoopConf)
    val files = metadataBatches(fm, operatorDir).filter(_ <= batchId).maxOption.toSeq.flatMap { b =>
      schemaFilePaths(readMetadataV2(fm, OperatorStateMetadataV2.metadataFilePath(operatorDir, b)), id.storeName)
    }
    val schemas = files.flatMap(f => readSchemaFile(fm, new Path(f))).flatMap { s =>
      Seq(StateSchemaMetadataKey(s.colFamilyName, s.keySchemaId, isKey = true) ->
        StatesnapAvroSchemas.metadata(s.keySchema),
        StateSchemaMetadataKey(s.colFamilyName, s.valueSchemaId, isKey = false) ->
          StatesnapAvroSchemas.metadata(s.valueSchema))
    }
    new InMemoryStateSchemaProvider(StateSchemaMetadata(schemas.toMap))
  }

  private def readMetadataV2(fm: CheckpointFileManager, path: Path): OperatorStateMetadataV2 =
    CheckpointFile.read(path, "Spark's operator metadata") {
      OperatorStateMetadataUtils.readMetadata(fm.open(path), 2) match {
        case Some(m: OperatorStateMetadataV2) => m
        case other => throw CheckpointFile.malformed(s"it holds $other, not operator metadata v2")
      }
    }

  private def schemaFilePaths(metadata: OperatorStateMetadataV2, storeName: String): List[String] =
    metadata.stateStoreInfo.find(_.storeName == storeName).map(_.stateSchemaFilePaths).getOrElse(Nil)

  private def lastSchemaFile(fm: CheckpointFileManager, paths: List[String]): List[StateStoreColFamilySchema] =
    paths.lastOption.map(p => readSchemaFile(fm, new Path(p))).getOrElse(Nil)

  /**
   * `schemas` with `family`'s value schema as declared (under its Avro schema id, or one up as Spark's evolution
   * counts) and its key as declared (a map's user key moved by statesnap), or `family` added as Spark's driver would
   * list it.
   */
  private def withFamily(schemas: List[StateStoreColFamilySchema], family: Family): List[StateStoreColFamilySchema] = {
    // A map state's key is the store's composite struct<key, userKey>; Spark's file also names the user key.
    val userKey = family.keySpec match {
      case _: PrefixKeyScanStateEncoderSpec => MapStateKey.parts(family.keySchema).map(_._2)
      case _ => None
    }
    def sameValue(s: StateStoreColFamilySchema) =
      family.avroSchemaId.fold(s.valueSchema == family.valueSchema)(_ == s.valueSchemaId)
    schemas.find(_.colFamilyName == family.name) match {
      case Some(s) if sameValue(s) && s.keySchema == family.keySchema => schemas
      case Some(s) =>
        val valued = if (sameValue(s)) s else s.copy(valueSchemaId = family.avroSchemaId.getOrElse(
          (s.valueSchemaId + 1).toShort), valueSchema = family.valueSchema)
        val keyed = if (s.keySchema == family.keySchema) valued
          else valued.copy(keySchema = family.keySchema, keyStateEncoderSpec = Some(family.keySpec),
            userKeyEncoderSchema = userKey)
        schemas.map(x => if (x eq s) keyed else x)
      case None =>
        schemas :+ StateStoreColFamilySchema(family.name, 0, family.keySchema, family.avroSchemaId.getOrElse(0),
          family.valueSchema, Some(family.keySpec), userKey)
    }
  }

  /**
   * The schemas in Spark's schema file `file` (any format), read with Spark's reader and closed after.
   */
  private def readSchemaFile(fm: CheckpointFileManager, file: Path): List[StateStoreColFamilySchema] =
    CheckpointFile.read(file, "Spark's state schema file") {
      val in = fm.open(file)
      try StateSchemaCompatibilityChecker.readSchemaFile(in) finally in.close()
    }

  /**
   * Writes `schemas` to `file` in schema format `version`, as Spark's `StateSchemaCompatibilityChecker` does (see
   * [[SingleStateSchemaFormat.write]]).
   */
  private def writeSchemaFile(fm: CheckpointFileManager, file: Path, schemas: List[StateStoreColFamilySchema],
      version: Int, overwrite: Boolean): Unit = {
    val out = fm.createAtomic(file, overwriteIfPossible = overwrite)
    try SchemaHelper.SchemaWriter.createSchemaWriter(version).write(schemas, out) catch {
      case e: Throwable => out.cancel(); throw e
    }
    out.close()
  }
}
