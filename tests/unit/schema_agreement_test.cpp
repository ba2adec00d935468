// The schema's enumerations agree with the wire's, and docs/schema.md with the schema: its
// tables of kinds and APIs with storage/schema_enums.h, and the columns it lists for each table
// with those of a trace written and indexed by this build.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/time/report_time_index.h"
#include "markdown_table.h"
#include "storage/schema_enums.h"
#include "storage/trace_reader.h"
#include "synthetic_trace.h"
#include "vramtrace.pb.h"

namespace vramtrace {
namespace {

// Each row names its wire enumerator: the two must carry the same number.
#define VRAMTRACE_KIND_AGREES(constant, id, name, wire_name, occupies, description) \
  static_assert(wire::wire_name == storage::allocation_kind::constant,              \
                "allocation kind " name " differs from the wire's " #wire_name);
VRAMTRACE_ALLOCATION_KINDS(VRAMTRACE_KIND_AGREES)
#undef VRAMTRACE_KIND_AGREES

#define VRAMTRACE_API_AGREES(constant, id, name, wire_name) \
  static_assert(wire::wire_name == storage::api::constant,  \
                "api " name " differs from the wire's " #wire_name);
VRAMTRACE_APIS(VRAMTRACE_API_AGREES)
#undef VRAMTRACE_API_AGREES

// A wire value without a row would be stored with a kind or API no table names.
static_assert(wire::Kind_ARRAYSIZE == storage::kAllocationKinds.size(),
              "proto/vramtrace.proto's Kind and storage/schema_enums.h list different kinds");
static_assert(wire::Api_ARRAYSIZE == storage::kApis.size(),
              "proto/vramtrace.proto's Api and storage/schema_enums.h list different APIs");

TEST(WireSchemaAgreement, EveryRowNamesTheWireEnumeratorOfItsNumber) {
#define VRAMTRACE_KIND_NAMED(constant, id, name, wire_name, occupies, description) \
  EXPECT_EQ(wire::Kind_Name(static_cast<wire::Kind>(id)), #wire_name);
  VRAMTRACE_ALLOCATION_KINDS(VRAMTRACE_KIND_NAMED)
#undef VRAMTRACE_KIND_NAMED
#define VRAMTRACE_API_NAMED(constant, id, name, wire_name) \
  EXPECT_EQ(wire::Api_Name(static_cast<wire::Api>(id)), #wire_name);
  VRAMTRACE_APIS(VRAMTRACE_API_NAMED)
#undef VRAMTRACE_API_NAMED
}

using testing::cells;
using testing::lines_of;
using testing::read_schema_doc;
using testing::table_with_header;
using testing::trim;
using testing::unquote;

TEST(SchemaDoc, KindsTableMatchesTheSchema) {
  const auto rows =
      table_with_header(read_schema_doc(), "| id | name | in device peaks | what it is |");
  ASSERT_FALSE(rows.empty()) << "docs/schema.md has no table of allocation kinds";
  std::map<int, std::vector<std::string>> documented;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 4u) << "docs/schema.md: a kind's row has 4 cells: " << row.front();
    documented[std::stoi(row[0])] = row;
  }
  for (const storage::AllocationKindInfo& kind : storage::kAllocationKinds) {
    const auto found = documented.find(kind.id);
    if (found == documented.end()) {
      ADD_FAILURE() << "docs/schema.md lacks allocation kind " << kind.id << " (" << kind.name
                    << ")";
      continue;
    }
    const std::vector<std::string>& row = found->second;
    EXPECT_EQ(unquote(row[1]), kind.name)
        << "docs/schema.md names kind " << kind.id << " " << row[1] << ", the schema " << kind.name;
    EXPECT_EQ(row[2], kind.occupies_device_memory ? "yes" : "no")
        << "docs/schema.md: whether kind " << kind.name << " is in the device peaks";
    EXPECT_EQ(row[3], kind.description)
        << "docs/schema.md describes kind " << kind.name << " otherwise than schema_enums.h";
    documented.erase(found);
  }
  for (const auto& [id, row] : documented)
    ADD_FAILURE() << "docs/schema.md documents kind " << id << " (" << row[1]
                  << "), which the schema lacks";
}

TEST(SchemaDoc, ApiTableMatchesTheSchema) {
  const auto rows = table_with_header(read_schema_doc(), "| id | name |");
  ASSERT_FALSE(rows.empty()) << "docs/schema.md has no table of APIs";
  std::map<int, std::string> documented;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 2u) << "docs/schema.md: an API's row has 2 cells: " << row.front();
    documented[std::stoi(row[0])] = unquote(row[1]);
  }
  for (const storage::NamedId& api : storage::kApis) {
    const auto found = documented.find(api.id);
    if (found == documented.end()) {
      ADD_FAILURE() << "docs/schema.md lacks api " << api.id << " (" << api.name << ")";
      continue;
    }
    EXPECT_EQ(found->second, api.name) << "docs/schema.md names api " << api.id << " "
                                       << found->second << ", the schema " << api.name;
    documented.erase(found);
  }
  for (const auto& [id, name] : documented)
    ADD_FAILURE() << "docs/schema.md documents api " << id << " (" << name
                  << "), which the schema lacks";
}

// Columns docs/schema.md gives each table: the first cells of the table under the table's
// heading ("`pid`, `ppid`, `uid`" are three), or else the names of the first
// `table(column, ...)` it writes out in prose.
std::map<std::string, std::set<std::string>> documented_columns(const std::string& doc) {
  std::map<std::string, std::set<std::string>> columns;
  const std::vector<std::string> lines = lines_of(doc);
  std::string table;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.starts_with("### `")) {
      table = line.substr(5, line.find('`', 5) - 5);
    } else if (line.starts_with("#")) {
      table.clear();
    } else if (!table.empty() && line == "| column | type | meaning |") {
      for (std::size_t j = i + 2; j < lines.size() && lines[j].starts_with('|'); ++j) {
        std::istringstream names(unquote(cells(lines[j]).front()));
        for (std::string name; std::getline(names, name, ',');) columns[table].insert(trim(name));
      }
    }
  }
  // `name(a, b, ...)`, perhaps over several lines.
  std::string joined;
  for (const std::string& line : lines)
    joined += trim(line.starts_with("- ") ? line.substr(2) : line) + " ";
  for (std::size_t open = joined.find('`'); open != std::string::npos;
       open = joined.find('`', open + 1)) {
    const std::size_t close = joined.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string quoted = joined.substr(open + 1, close - open - 1);
    open = close;
    const std::size_t paren = quoted.find('(');
    if (paren == std::string::npos || !quoted.ends_with(')')) continue;
    const std::string name = quoted.substr(0, paren);
    if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
      continue;
    std::istringstream names(quoted.substr(paren + 1, quoted.size() - paren - 2));
    std::set<std::string> listed;
    for (std::string column; std::getline(names, column, ',');) listed.insert(trim(column));
    // The first such listing is the table's; later ones name an index's columns.
    columns.emplace(name, listed);
  }
  return columns;
}

struct Database {
  sqlite3* db = nullptr;
  explicit Database(const std::filesystem::path& path) {
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  }
  ~Database() { sqlite3_close(db); }
  std::vector<std::string> strings(const std::string& sql) const {
    std::vector<std::string> out;
    sqlite3_stmt* statement = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr);
    while (sqlite3_step(statement) == SQLITE_ROW)
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
    sqlite3_finalize(statement);
    return out;
  }
};

TEST(SchemaDoc, ColumnsOfEveryTableMatchATrace) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("vramtrace_schema_doc_" + std::to_string(::getpid()) + ".db");
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  {
    // With its time index kept in the file: the doc's "Time index" tables too.
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace, nullptr) << failure.message;
    ASSERT_NE(analysis::open_time_index(*trace), nullptr);
  }
  const auto documented = documented_columns(read_schema_doc());
  const Database trace(path);
  for (const std::string& table :
       trace.strings("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND "
                     "name NOT LIKE 'sqlite_%' ORDER BY name")) {
    if (table == "allocation_view") continue;  // allocation's columns and three names, as said
    const auto found = documented.find(table);
    if (found == documented.end()) {
      ADD_FAILURE() << "docs/schema.md lists no columns of the table " << table;
      continue;
    }
    std::set<std::string> actual;
    for (const std::string& column :
         trace.strings("SELECT name FROM pragma_table_info('" + table + "')"))
      actual.insert(column);
    for (const std::string& column : actual)
      EXPECT_TRUE(found->second.contains(column))
          << "docs/schema.md does not document the column " << table << "." << column;
    for (const std::string& column : found->second)
      EXPECT_TRUE(actual.contains(column))
          << "docs/schema.md documents " << table << "." << column << ", which the schema lacks";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace vramtrace
