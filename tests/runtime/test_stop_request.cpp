// Stop requests: raising SIGUSR1 or SIGTERM sets the flag instead of ending the process,
// the first signal is the one reported, a signal from another thread is seen, handlers
// restart interrupted system calls, and clear_stop_request() forgets. The handlers in
// place before each test are put back after it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "lib/runtime/stop_request.h"

using namespace hetu::runtime;

namespace {

// Installs the stop handlers for one test and restores the previous ones afterwards.
class ScopedStopHandlers {
 public:
  ScopedStopHandlers() {
    sigaction(SIGTERM, nullptr, &old_term_);
    sigaction(SIGUSR1, nullptr, &old_usr1_);
    install_stop_handlers();
    clear_stop_request();
  }
  ~ScopedStopHandlers() {
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGUSR1, &old_usr1_, nullptr);
    clear_stop_request();
  }
  ScopedStopHandlers(const ScopedStopHandlers&) = delete;
  ScopedStopHandlers& operator=(const ScopedStopHandlers&) = delete;

 private:
  struct sigaction old_term_ {};
  struct sigaction old_usr1_ {};
};

}  // namespace

TEST_CASE("stop request: SIGUSR1 and SIGTERM set the flag and name the signal") {
  ScopedStopHandlers handlers;
  CHECK_FALSE(stop_requested());
  CHECK(stop_signal() == 0);

  REQUIRE(std::raise(SIGUSR1) == 0);  // the process survives: the handler only records
  CHECK(stop_requested());
  CHECK(stop_signal() == SIGUSR1);
  CHECK(stop_signal_name(stop_signal()) == "SIGUSR1");

  clear_stop_request();
  CHECK_FALSE(stop_requested());
  REQUIRE(std::raise(SIGTERM) == 0);
  CHECK(stop_requested());
  CHECK(stop_signal() == SIGTERM);
  CHECK(stop_signal_name(SIGTERM) == "SIGTERM");
  CHECK(stop_signal_name(SIGHUP) == "signal " + std::to_string(SIGHUP));
}

TEST_CASE("stop request: the first signal wins and installing twice is harmless") {
  ScopedStopHandlers handlers;
  install_stop_handlers();
  REQUIRE(std::raise(SIGUSR1) == 0);
  REQUIRE(std::raise(SIGTERM) == 0);  // Slurm's SIGTERM at the limit after the early SIGUSR1
  CHECK(stop_signal() == SIGUSR1);
}

TEST_CASE("stop request: a signal sent to the process from another thread is seen") {
  ScopedStopHandlers handlers;
  std::thread sender([] { ::kill(::getpid(), SIGUSR1); });  // process-directed, like slurmstepd's
  sender.join();
  // Delivery to a process may land on any thread that does not block it; wait a little.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(stop_signal() == SIGUSR1);
}

TEST_CASE("stop request: handlers use SA_RESTART so blocking calls are not cut short") {
  ScopedStopHandlers handlers;
  for (int signal : {SIGTERM, SIGUSR1}) {
    struct sigaction current {};
    REQUIRE(sigaction(signal, nullptr, &current) == 0);
    CHECK(current.sa_handler != SIG_DFL);
    CHECK(current.sa_handler != SIG_IGN);
    CHECK((current.sa_flags & SA_RESTART) != 0);
  }
}
