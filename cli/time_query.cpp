#include "cli/time_query.h"

namespace vramtrace::cli {

analysis::MomentSpec moment_from_option(const std::string& text) {
  try {
    return analysis::parse_moment(text);
  } catch (const analysis::BadMoment& bad) {
    throw ReportRefusal(bad.what());
  }
}

}  // namespace vramtrace::cli
