package io.statesnap.provider

import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import io.statesnap.StatesnapException
import org.junit.Assert._
import org.junit.Test

class MigrationGateTest {
  private val store = MigrationGate.storeKey("/ck", 0, 0, "default")

  /** Starts a "migration" on another thread that writes (counts) entries until its gate stops it. */
  private def migrating(gate: MigrationGate, written: AtomicLong, started: CountDownLatch): Thread = {
    val thread = new Thread(() => try gate.run("state 's'") {
      started.countDown()
      while (true) {
        val before = written.getAndIncrement()
        gate.advanced("state 's'", before, before + 1)
      }
    } catch { case _: StatesnapException => () })
    thread.start()
    thread
  }

  @Test def stopAndWaitReturnsOnlyOnceTheMigrationHasStoppedWriting(): Unit = {
    val gate = new MigrationGate(store, None)
    val written = new AtomicLong
    val started = new CountDownLatch(1)
    val thread = migrating(gate, written, started)
    assertTrue(started.await(10, TimeUnit.SECONDS))
    gate.stopAndWait("the store was aborted")
    val atStop = written.get()
    Thread.sleep(50)
    assertEquals("no write after stopAndWait returned", atStop, written.get())
    thread.join(10000)
    assertFalse(thread.isAlive)
  }

  @Test def aMigrationOfAStoppedGateNeverStartsAndSaysWhy(): Unit = {
    val gate = new MigrationGate(store, None)
    gate.stopAndWait("its store was aborted")
    val e = assertThrows(classOf[StatesnapException], () => gate.run("state 's'")(fail("must not run")))
    assertEquals(StatesnapException.MigrationInterrupted, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("state 's' stopped after 0 entries because its store was aborted"))
    assertTrue(e.getMessage, e.getMessage.contains("Nothing of it was committed"))
  }

  @Test def aNewMigrationOfTheSameStoreStopsTheOneInFlightFirst(): Unit = {
    val (old, written, started) = (new MigrationGate(store, None), new AtomicLong, new CountDownLatch(1))
    val thread = migrating(old, written, started)
    assertTrue(started.await(10, TimeUnit.SECONDS))
    val ranAfter = new MigrationGate(store, None).run("state 's'") {
      val atStart = written.get()
      Thread.sleep(50)
      atStart == written.get() && !thread.isAlive
    }
    assertTrue("the earlier migration had stopped before the new one ran", ranAfter)
  }

  @Test def migrationsOfOtherStoresRunSideBySide(): Unit = {
    val (other, written, started) = (new MigrationGate(store, None), new AtomicLong, new CountDownLatch(1))
    val thread = migrating(other, written, started)
    assertTrue(started.await(10, TimeUnit.SECONDS))
    new MigrationGate(MigrationGate.storeKey("/ck", 0, 1, "default"), None).run("state 's'")(())
    assertTrue(thread.isAlive)
    other.stopAndWait("test over")
  }
}
