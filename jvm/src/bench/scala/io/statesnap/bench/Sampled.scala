package io.statesnap.bench

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.AtomicLong
import javax.management.{Notification, NotificationEmitter, NotificationListener}
import javax.management.openmbean.CompositeData

import scala.jdk.CollectionConverters._

import com.sun.management.GarbageCollectionNotificationInfo

/**
 * Wall time, the process's CPU time over it (RocksDB's background threads included), the peak heap used, and the
 * largest heap left after a GC while it ran (-1 if none ran): what the work kept alive, garbage not counted.
 */
final case class Sampled(seconds: Double, cpuSeconds: Double, peakHeapBytes: Long, afterGcBytes: Long = -1,
    gcs: Int = 0) {
  def coresUsed: Double = cpuSeconds / seconds
  def peakHeapMb: Long = peakHeapBytes / (1 << 20)
  def afterGcMb: Long = if (afterGcBytes < 0) -1 else afterGcBytes / (1 << 20)
}

object Sampled {
  /**
   * Runs `body` in this JVM, which in `local` mode is also the executor's: the heap is sampled every 5 ms, after a
   * GC first so that what earlier work left behind does not count. The sampled peak includes garbage not yet
   * collected (how much depends on the collector's young generation, not on the work), so the heap after each GC
   * that runs meanwhile is recorded too.
   */
  def apply(body: => Unit): Sampled = {
    val recording = start()
    try body finally recording.stop()
    recording.stop() // the same record: a recording ends once
  }

  /** Starts recording as [[apply]] does, for work driven from elsewhere (Python, through py4j): `stop()` ends it. */
  def start(): Recording = new Recording

  final class Recording private[Sampled] {
    private val memory = ManagementFactory.getMemoryMXBean
    System.gc()
    private val peak = new AtomicLong(memory.getHeapMemoryUsage.getUsed)
    private val afterGc = new AtomicLong(-1)
    private val gcs = new java.util.concurrent.atomic.AtomicInteger
    private val heapPools = ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP)
      .map(_.getName).toSet
    private val listener: NotificationListener = (n: Notification, _: AnyRef) =>
      if (n.getType == GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION) {
        val gc = GarbageCollectionNotificationInfo.from(n.getUserData.asInstanceOf[CompositeData])
        // Delivered asynchronously: the GC run above, before the work, may arrive after this listener is added.
        if (gc.getGcCause != "System.gc()") {
          val heap = gc.getGcInfo.getMemoryUsageAfterGc.asScala.collect {
            case (pool, use) if heapPools(pool) => use.getUsed
          }
          afterGc.accumulateAndGet(heap.sum, math.max)
          gcs.incrementAndGet()
        }
      }
    private val collectors =
      ManagementFactory.getGarbageCollectorMXBeans.asScala.collect { case e: NotificationEmitter => e }
    collectors.foreach(_.addNotificationListener(listener, null, null))
    @volatile private var running = true
    private val sampler = new Thread(() => while (running) {
      peak.accumulateAndGet(memory.getHeapMemoryUsage.getUsed, math.max)
      Thread.sleep(5)
    })
    sampler.setDaemon(true)
    sampler.start()
    private val os = ManagementFactory.getOperatingSystemMXBean.asInstanceOf[com.sun.management.OperatingSystemMXBean]
    private val (started, cpuStarted) = (System.nanoTime(), os.getProcessCpuTime)
    private var result: Option[Sampled] = None

    /** Ends the recording (once: a second call returns the same). */
    def stop(): Sampled = synchronized {
      if (result.isEmpty) {
        running = false
        val sampled = Sampled((System.nanoTime() - started) / 1e9, (os.getProcessCpuTime - cpuStarted) / 1e9, 0L)
        sampler.join()
        collectors.foreach(_.removeNotificationListener(listener))
        result = Some(sampled.copy(peakHeapBytes = peak.get, afterGcBytes = afterGc.get, gcs = gcs.get))
      }
      result.get
    }
  }
}
