// SPDX-License-Identifier: MIT
/**
 * @file metrics.hpp
 * C++17 wrappers of libpercpu-metrics, for daemons that use prometheus-cpp
 * today (docs/cpp.md ports one, line by line): counters, counters and
 * gauges of doubles, set-style gauges, histograms, summaries, label
 * families whose label values are std::string_view (curried views, partial
 * removal), registries, the
 * exposition as a std::string, the /metrics server, and the push to a
 * Pushgateway.
 *
 * Header-only: every member is inline over the C API of <percpu/metrics.h>,
 * <percpu/counter_double.h>, <percpu/family.h>, <percpu/gauge.h>,
 * <percpu/histogram.h>, <percpu/summary.h>, <percpu/metrics_registry.h> and
 * <percpu/metrics_http.h>, so the library's ABI is the C one and nothing
 * here is exported. The hot calls (add, observe, set) are the C fast paths,
 * through one pointer: inline, but a summary's observe, which is a call
 * (pcpu_summary_observe()).
 *
 * Ownership. percpu::counter, counter_double, gauge, gauge_double,
 * histogram, summary, the families, a family's curried view (destroyed
 * before its family), registry and server own what their
 * constructor created or registered, are move-only, and destroy (and so
 * unregister) it in their destructor. A moved-from object owns nothing: it
 * may be destroyed or assigned to, not used. percpu::counter_ref,
 * gauge_ref, histogram_ref and summary_ref are copyable pointers to a
 * metric owned elsewhere (a family's child, or an owning object), as
 * prometheus-cpp's Counter&: keep them no longer than their
 * owner, and for a family's child, no longer than it is in the family (see
 * <percpu/family.h>, "Removal"). Destroy metrics before the registry they
 * are in: declare the registry first.
 *
 * Errors. A constructor or call that the C API refuses throws
 * std::system_error with the C call's errno in std::generic_category()
 * (code().value() == EINVAL for a bad name, EEXIST for a name registered
 * already, ...), and the C call's name as what(); the wrapper's own
 * allocations throw std::bad_alloc. Built without exceptions
 * (-fno-exceptions), it prints the same to stderr and aborts. Destructors,
 * the hot calls and the reads never throw, but for a summary's reads, which
 * may fail as the C ones do (ENOMEM; EINVAL for a quantile outside [0, 1]).
 *
 * Strings. Every std::string_view may view any bytes, not only a
 * NUL-terminated string: it is copied, NUL-terminated, for the C call. A
 * NUL byte inside a name, help, unit or constant label is EINVAL; inside a
 * family's label value, the tuple is refused as a bad one (EINVAL, or the
 * family's overflow child where it has one), since no C string carries it.
 *
 * Needs C++17. Link: pkg-config percpu-metrics.
 * @since 0.5
 */
#ifndef PERCPU_METRICS_HPP
#define PERCPU_METRICS_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "<percpu/metrics.hpp> needs C++17 (-std=c++17)"
#endif

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <percpu/counter.h>
#include <percpu/counter_double.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>
#include <percpu/summary.h>

namespace percpu {

/** A label: name and value. @since 0.5 */
using label = std::pair<std::string_view, std::string_view>;

/** Labels, as prometheus-cpp's {{"name", "value"}, ...}. @since 0.5 */
using labels = std::initializer_list<label>;

/* Internal to the header: not API, may change in any release. */
namespace detail {

[[noreturn]] inline void fail(int err, const char *what)
{
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
	throw std::system_error(err, std::generic_category(), what);
#else
	std::fprintf(stderr, "percpu: %s: %s\n", what, std::strerror(err));
	std::abort();
#endif
}

/* A C call's 0 or negative errno. */
inline void check(int ret, const char *what)
{
	if (ret < 0)
		fail(-ret, what);
}

/* A C constructor's pointer or NULL with errno. */
template <class T>
inline T *check_ptr(T *p, const char *what)
{
	if (p == nullptr)
		fail(errno != 0 ? errno : ENOMEM, what);
	return p;
}

inline bool has_nul(std::string_view s) noexcept
{
	return s.find('\0') != std::string_view::npos;
}

/*
 * A NULL-terminated array of NUL-terminated copies of string_views, as the
 * C calls take label lists: on the stack when short (a family lookup then
 * allocates nothing), else on the heap. Points into itself: not copyable.
 * A view holding a NUL byte is EINVAL, or with @bad_as_invalid, replaced by
 * "\xff" (not UTF-8), so that the C call refuses the tuple by its own
 * rules (counted, the overflow child) rather than see a shorter value.
 */
class cstrings {
public:
	cstrings(const std::string_view *v, std::size_t n, bool bad_as_invalid = false)
	{
		build(n, [v](std::size_t i) { return v[i]; }, bad_as_invalid);
	}

	cstrings(const label *l, std::size_t n)
	{
		build(2 * n, [l](std::size_t i) { return i % 2 ? l[i / 2].second : l[i / 2].first; },
		      false);
	}

	cstrings(const cstrings &) = delete;
	cstrings &operator=(const cstrings &) = delete;

	const char *const *get() const noexcept { return ptrs_; }

private:
	static constexpr std::size_t small_chars = 256;
	static constexpr std::size_t small_ptrs = 2 * PCPU_FAMILY_MAX_LABELS + 1;

	template <class At>
	void build(std::size_t n, At at, bool bad_as_invalid)
	{
		static constexpr char invalid[] = "\xff";
		std::size_t chars = 0;

		for (std::size_t i = 0; i < n; i++) {
			std::string_view s = at(i);

			if (has_nul(s) && !bad_as_invalid)
				fail(EINVAL, "percpu: a label holds a NUL byte");
			chars += (has_nul(s) ? sizeof(invalid) - 1 : s.size()) + 1;
		}
		char *buf = small_chars_;
		ptrs_ = small_ptrs_;
		if (chars > small_chars) {
			big_chars_.resize(chars);
			buf = big_chars_.data();
		}
		if (n + 1 > small_ptrs) {
			big_ptrs_.resize(n + 1);
			ptrs_ = big_ptrs_.data();
		}
		for (std::size_t i = 0; i < n; i++) {
			std::string_view s = at(i);

			if (has_nul(s))
				s = std::string_view(invalid, sizeof(invalid) - 1);
			if (!s.empty())
				std::memcpy(buf, s.data(), s.size());
			buf[s.size()] = '\0';
			ptrs_[i] = buf;
			buf += s.size() + 1;
		}
		ptrs_[n] = nullptr;
	}

	char small_chars_[small_chars];
	const char *small_ptrs_[small_ptrs];
	std::vector<char> big_chars_;
	std::vector<const char *> big_ptrs_;
	const char **ptrs_;
};

/* @s as a C string for a descriptor: NULL when empty (none), EINVAL with a NUL. */
inline const char *c_str_or_null(const std::string &s)
{
	if (has_nul(s))
		fail(EINVAL, "percpu: a name, help or unit holds a NUL byte");
	return s.empty() ? nullptr : s.c_str();
}

} // namespace detail

class registry;

/**
 * What a metric or family is registered as: name, help, unit, constant
 * labels, scale and registry, as the C descriptors' fields of those names
 * (struct pcpu_metric_desc). Holds copies of its strings, so that it may
 * outlive them; the C call copies them again.
 * @code
 * percpu::counter requests{percpu::desc("http_requests").help("Requests served.")};
 * @endcode
 * @since 0.5
 */
class desc {
public:
	/** A metric named @p name (a counter's without "_total"). */
	explicit desc(std::string_view name) : name_(name) {}

	/** HELP text; empty (the default): none. */
	desc &help(std::string_view h)
	{
		help_ = h;
		return *this;
	}

	/** Unit, the end of the name ("bytes" for "..._bytes"); empty: none. */
	desc &unit(std::string_view u)
	{
		unit_ = u;
		return *this;
	}

	/** Adds constant labels, as prometheus-cpp's Labels({...}). */
	desc &labels(percpu::labels l)
	{
		for (const label &kv : l) {
			labels_.emplace_back(kv.first);
			labels_.emplace_back(kv.second);
		}
		return *this;
	}

	/** Exposes values divided by @p s (nanoseconds counted, 1000000000: seconds). */
	desc &scale(int64_t s)
	{
		scale_ = s;
		return *this;
	}

	/**
	 * The kind: for a counter or counter family, PCPU_METRIC_GAUGE makes
	 * it a per-CPU gauge (adds of any sign); for a gauge,
	 * PCPU_METRIC_INFO an info metric. Default: the type's own.
	 */
	desc &kind(enum pcpu_metric_kind k)
	{
		kind_ = k;
		return *this;
	}

	/** Registers in @p r rather than the process's registry. */
	inline desc &in(registry &r);

	/** @internal The C descriptor's fields, for the wrappers. */
	const std::string &name() const noexcept { return name_; }
	/** @internal */
	const std::string &help() const noexcept { return help_; }
	/** @internal */
	const std::string &unit() const noexcept { return unit_; }
	/** @internal */
	int64_t scale() const noexcept { return scale_; }
	/** @internal 0: the type's own */
	int kind() const noexcept { return kind_; }
	/** @internal */
	struct pcpu_metrics_registry *c_registry() const noexcept { return registry_; }

	/** @internal {"key", "value", ..., NULL}, or NULL for none */
	class c_labels {
	public:
		explicit c_labels(const desc &d)
		{
			for (const std::string &s : d.labels_) {
				if (detail::has_nul(s))
					detail::fail(EINVAL, "percpu: a constant label holds a NUL byte");
				ptrs_.push_back(s.c_str());
			}
			ptrs_.push_back(nullptr);
		}
		const char *const *get() const noexcept
		{
			return ptrs_.size() > 1 ? ptrs_.data() : nullptr;
		}

	private:
		std::vector<const char *> ptrs_;
	};

private:
	std::string name_, help_, unit_;
	std::vector<std::string> labels_;
	int64_t scale_ = 0;
	int kind_ = 0;
	struct pcpu_metrics_registry *registry_ = nullptr;
};

/* The exposition in @p f of @p r (NULL: the process's registry). */
namespace detail {
inline std::string exposition(struct pcpu_metrics_registry *r, enum pcpu_metrics_format f)
{
	char *buf = nullptr;
	std::size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (out == nullptr)
		fail(errno, "open_memstream");
	int ret = pcpu_metrics_registry_write(r, out, f);
	int closed = std::fclose(out);
	if (ret == 0 && closed != 0)
		ret = -ENOMEM;
	if (ret < 0) {
		std::free(buf);
		fail(-ret, "pcpu_metrics_registry_write");
	}
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
	try {
		std::string text(buf, len);
		std::free(buf);
		return text;
	} catch (...) {
		std::free(buf);
		throw;
	}
#else
	std::string text(buf, len);
	std::free(buf);
	return text;
#endif
}
} // namespace detail

/**
 * Every metric of the process's registry, as pcpu_metrics_write() writes
 * them in format @p f (protobuf: the bytes, NULs included). Throws as
 * pcpu_metrics_write() fails. @since 0.5
 */
inline std::string exposition(enum pcpu_metrics_format f = PCPU_METRICS_PROMETHEUS)
{
	return detail::exposition(nullptr, f);
}

/**
 * A registry of its own (<percpu/metrics_registry.h>), as prometheus-cpp's
 * Registry: its metrics are exposed apart from the process's, each series
 * with the registry's constant labels. @since 0.5
 */
class registry {
public:
	/** A registry with the constant labels @p l (none by default). */
	explicit registry(percpu::labels l = {})
	{
		detail::cstrings c(l.begin(), l.size());

		r_ = detail::check_ptr(pcpu_metrics_registry_create(l.size() ? c.get() : nullptr),
				       "pcpu_metrics_registry_create");
	}

	registry(registry &&o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
	registry &operator=(registry &&o) noexcept
	{
		if (this != &o) {
			reset();
			r_ = std::exchange(o.r_, nullptr);
		}
		return *this;
	}
	registry(const registry &) = delete;
	registry &operator=(const registry &) = delete;

	/**
	 * Destroys the registry. Its metrics must be destroyed first; one that
	 * still holds some is left allocated (pcpu_metrics_registry_destroy()'s
	 * EBUSY), never freed under them.
	 */
	~registry() { reset(); }

	/** Its metrics in format @p f, as percpu::exposition(). */
	std::string exposition(enum pcpu_metrics_format f = PCPU_METRICS_PROMETHEUS) const
	{
		return detail::exposition(r_, f);
	}

	/** The C registry. */
	struct pcpu_metrics_registry *get() const noexcept { return r_; }

private:
	void reset() noexcept
	{
		if (r_ != nullptr)
			(void)pcpu_metrics_registry_destroy(r_);
		r_ = nullptr;
	}

	struct pcpu_metrics_registry *r_;
};

inline desc &desc::in(registry &r)
{
	registry_ = r.get();
	return *this;
}

namespace detail {

/*
 * The C descriptor of @d, kind @kind unless @d names one, built before
 * anything is allocated so that a bad string throws with nothing to undo.
 */
class metric_desc {
public:
	metric_desc(const desc &d, enum pcpu_metric_kind kind) : labels_(d)
	{
		md_.name = c_str_or_null(d.name());
		md_.help = c_str_or_null(d.help());
		md_.unit = c_str_or_null(d.unit());
		md_.kind = d.kind() ? static_cast<enum pcpu_metric_kind>(d.kind()) : kind;
		md_.labels = labels_.get();
		md_.scale = d.scale();
		md_.registry = d.c_registry();
	}
	const struct pcpu_metric_desc *get() const noexcept { return &md_; }

private:
	desc::c_labels labels_;
	struct pcpu_metric_desc md_ = {};
};

} // namespace detail

/* ---- counters ---- */

/**
 * A counter owned elsewhere (a counter family's child, a percpu::counter,
 * a PCPU_COUNTER_DEFINE()): a pointer, copied freely. @since 0.5
 */
class counter_ref {
public:
	/** Refers to @p c, which must be initialised (or NULL: an empty ref). */
	explicit counter_ref(struct pcpu_counter *c = nullptr) noexcept : c_(c) {}

	/** Adds @p n: the inline per-CPU add of pcpu_counter_add(). */
	PCPU_ALWAYS_INLINE void add(int64_t n) const noexcept { pcpu_counter_add(c_, n); }
	/** Adds 1, as prometheus-cpp's Increment(). */
	PCPU_ALWAYS_INLINE void inc() const noexcept { pcpu_counter_add(c_, 1); }
	/**
	 * Adds @p n and records the exemplar @p l ({{"trace_id", "..."}}), as
	 * pcpu_counter_add_exemplar() (a slow path; the add counts even when it
	 * throws).
	 */
	void add_exemplar(int64_t n, percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		detail::check(pcpu_counter_add_exemplar(c_, n, c.get()), "pcpu_counter_add_exemplar");
	}
	/** The exact value (pcpu_counter_sum()), as the exposition shows it unscaled. */
	int64_t value() const noexcept { return pcpu_counter_sum(c_); }
	/** The approximate value (pcpu_counter_read()): one load. */
	int64_t read() const noexcept { return pcpu_counter_read(c_); }
	/** The C counter. */
	struct pcpu_counter *get() const noexcept { return c_; }
	/** Whether it refers to a counter. */
	explicit operator bool() const noexcept { return c_ != nullptr; }

protected:
	struct pcpu_counter *c_;
};

/**
 * A per-CPU counter registered as a metric (pcpu_counter_init_opts() and
 * pcpu_counter_register()), destroyed with it. With
 * desc::kind(PCPU_METRIC_GAUGE), a per-CPU gauge: adds of either sign from
 * many threads scale, where a set-style percpu::gauge is one shared
 * cacheline. @since 0.5
 */
class counter : public counter_ref {
public:
	/**
	 * Initialises (options @p opts, NULL: defaults) and registers the
	 * counter @p d. Throws EINVAL, EEXIST or ENOMEM as those calls return.
	 */
	explicit counter(const desc &d, const struct pcpu_counter_options *opts = nullptr)
	{
		detail::metric_desc md(d, PCPU_METRIC_COUNTER);

		c_ = new struct pcpu_counter();
		int ret = pcpu_counter_init_opts(c_, 0, opts);
		const char *what = "pcpu_counter_init_opts";

		if (ret == 0) {
			ret = pcpu_counter_register(c_, md.get());
			what = "pcpu_counter_register";
		}
		if (ret < 0) {
			pcpu_counter_destroy(c_);
			delete c_;
			detail::fail(-ret, what);
		}
	}

	counter(counter &&o) noexcept : counter_ref(std::exchange(o.c_, nullptr)) {}
	counter &operator=(counter &&o) noexcept
	{
		if (this != &o) {
			reset();
			c_ = std::exchange(o.c_, nullptr);
		}
		return *this;
	}
	counter(const counter &) = delete;
	counter &operator=(const counter &) = delete;

	/** Unregisters and destroys it (pcpu_counter_destroy()). */
	~counter() { reset(); }

private:
	void reset() noexcept
	{
		if (c_ != nullptr) {
			pcpu_counter_destroy(c_);
			delete c_;
		}
		c_ = nullptr;
	}
};

/* ---- counters and gauges of doubles ---- */

/**
 * A per-CPU counter of doubles (<percpu/counter_double.h>) registered as a
 * metric, as prometheus-cpp's Counter::Increment(double): each add is
 * rounded to whole units of 1/scale (desc::scale(); 0, the default:
 * PCPU_COUNTER_DOUBLE_SCALE, units of 10^-9) and added on this CPU's slot,
 * lock-free. With desc::kind(PCPU_METRIC_GAUGE), a per-CPU gauge of
 * doubles: adds of either sign. @since 0.5
 */
class counter_double {
public:
	/**
	 * Initialises (pcpu_counter_double_init()) and registers
	 * (pcpu_counter_double_register()) the counter @p d. Throws EINVAL,
	 * EEXIST or ENOMEM as those calls return.
	 */
	explicit counter_double(const desc &d)
	{
		detail::metric_desc md(d, PCPU_METRIC_COUNTER);

		c_ = new struct pcpu_counter_double();
		int ret = pcpu_counter_double_init(c_, md.get()->kind, d.scale());
		const char *what = "pcpu_counter_double_init";

		if (ret == 0) {
			ret = pcpu_counter_double_register(c_, md.get());
			what = "pcpu_counter_double_register";
		}
		if (ret < 0) {
			pcpu_counter_double_destroy(c_);
			delete c_;
			detail::fail(-ret, what);
		}
	}

	counter_double(counter_double &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
	counter_double &operator=(counter_double &&o) noexcept
	{
		if (this != &o) {
			reset();
			c_ = std::exchange(o.c_, nullptr);
		}
		return *this;
	}
	counter_double(const counter_double &) = delete;
	counter_double &operator=(const counter_double &) = delete;

	/** Unregisters and destroys it (pcpu_counter_double_destroy()). */
	~counter_double() { reset(); }

	/**
	 * Adds @p v (pcpu_counter_double_add(), inline); false, adding
	 * nothing, for an amount it refuses (NaN, infinite, too large,
	 * negative on a counter), which refused() counts.
	 */
	PCPU_ALWAYS_INLINE bool add(double v) const noexcept
	{
		return pcpu_counter_double_add(c_, v) == 0;
	}
	/** Adds 1, as prometheus-cpp's Increment(). */
	PCPU_ALWAYS_INLINE void inc() const noexcept { (void)pcpu_counter_double_add(c_, 1.0); }
	/** The exact sum divided by the scale (pcpu_counter_double_sum()). */
	double value() const noexcept { return pcpu_counter_double_sum(c_); }
	/** Adds refused so far (pcpu_counter_double_refused()). */
	uint64_t refused() const noexcept { return pcpu_counter_double_refused(c_); }
	/** The C counter. */
	struct pcpu_counter_double *get() const noexcept { return c_; }
	/** Whether it owns a counter (not moved from). */
	explicit operator bool() const noexcept { return c_ != nullptr; }

private:
	void reset() noexcept
	{
		if (c_ != nullptr) {
			pcpu_counter_double_destroy(c_);
			delete c_;
		}
		c_ = nullptr;
	}

	struct pcpu_counter_double *c_;
};

/* ---- set-style gauges ---- */

/** A set-style gauge owned elsewhere (a gauge family's child, a percpu::gauge). @since 0.5 */
class gauge_ref {
public:
	/** Refers to @p g (NULL: an empty ref). */
	explicit gauge_ref(struct pcpu_gauge *g = nullptr) noexcept : g_(g) {}

	/** Sets it to @p v, as prometheus-cpp's Set(). */
	PCPU_ALWAYS_INLINE void set(int64_t v) const noexcept { pcpu_gauge_set(g_, v); }
	/** Adds @p n (any sign); returns the new value. */
	PCPU_ALWAYS_INLINE int64_t add(int64_t n) const noexcept { return pcpu_gauge_add(g_, n); }
	/** Adds 1, as prometheus-cpp's Increment(). */
	PCPU_ALWAYS_INLINE void inc() const noexcept { (void)pcpu_gauge_add(g_, 1); }
	/** Subtracts 1, as prometheus-cpp's Decrement(). */
	PCPU_ALWAYS_INLINE void dec() const noexcept { (void)pcpu_gauge_add(g_, -1); }
	/** The value. */
	int64_t value() const noexcept { return pcpu_gauge_get(g_); }
	/** The C gauge. */
	struct pcpu_gauge *get() const noexcept { return g_; }
	/** Whether it refers to a gauge. */
	explicit operator bool() const noexcept { return g_ != nullptr; }

protected:
	struct pcpu_gauge *g_;
};

/**
 * An int64 set-style gauge registered as a metric (pcpu_gauge_register()),
 * unregistered with it; with desc::kind(PCPU_METRIC_INFO), an info metric.
 * @since 0.5
 */
class gauge : public gauge_ref {
public:
	/** Registers the gauge @p d, at 0. Throws as pcpu_gauge_register() fails. */
	explicit gauge(const desc &d)
	{
		detail::metric_desc md(d, PCPU_METRIC_GAUGE);

		g_ = new struct pcpu_gauge();
		int ret = pcpu_gauge_register(g_, md.get());
		if (ret < 0) {
			delete g_;
			detail::fail(-ret, "pcpu_gauge_register");
		}
	}

	gauge(gauge &&o) noexcept : gauge_ref(std::exchange(o.g_, nullptr)) {}
	gauge &operator=(gauge &&o) noexcept
	{
		if (this != &o) {
			reset();
			g_ = std::exchange(o.g_, nullptr);
		}
		return *this;
	}
	gauge(const gauge &) = delete;
	gauge &operator=(const gauge &) = delete;

	/** Unregisters it (pcpu_gauge_unregister()) and frees it. */
	~gauge() { reset(); }

private:
	void reset() noexcept
	{
		if (g_ != nullptr) {
			pcpu_gauge_unregister(g_);
			delete g_;
		}
		g_ = nullptr;
	}
};

/**
 * A double set-style gauge registered as a metric
 * (pcpu_gauge_double_register()), as prometheus-cpp's Gauge holds a double.
 * @since 0.5
 */
class gauge_double {
public:
	/** Registers the gauge @p d, at 0. Throws as pcpu_gauge_double_register() fails. */
	explicit gauge_double(const desc &d)
	{
		detail::metric_desc md(d, PCPU_METRIC_GAUGE);

		g_ = new struct pcpu_gauge_double();
		int ret = pcpu_gauge_double_register(g_, md.get());
		if (ret < 0) {
			delete g_;
			detail::fail(-ret, "pcpu_gauge_double_register");
		}
	}

	gauge_double(gauge_double &&o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
	gauge_double &operator=(gauge_double &&o) noexcept
	{
		if (this != &o) {
			reset();
			g_ = std::exchange(o.g_, nullptr);
		}
		return *this;
	}
	gauge_double(const gauge_double &) = delete;
	gauge_double &operator=(const gauge_double &) = delete;

	/** Unregisters it and frees it. */
	~gauge_double() { reset(); }

	/** Sets it to @p v. */
	PCPU_ALWAYS_INLINE void set(double v) const noexcept { pcpu_gauge_double_set(g_, v); }
	/** Adds @p d in one atomic step; returns the new value. */
	PCPU_ALWAYS_INLINE double add(double d) const noexcept { return pcpu_gauge_double_add(g_, d); }
	/** Adds 1. */
	PCPU_ALWAYS_INLINE void inc() const noexcept { (void)pcpu_gauge_double_add(g_, 1.0); }
	/** Subtracts 1. */
	PCPU_ALWAYS_INLINE void dec() const noexcept { (void)pcpu_gauge_double_add(g_, -1.0); }
	/** The value. */
	double value() const noexcept { return pcpu_gauge_double_get(g_); }
	/** The C gauge. */
	struct pcpu_gauge_double *get() const noexcept { return g_; }

private:
	void reset() noexcept
	{
		if (g_ != nullptr) {
			pcpu_gauge_double_unregister(g_);
			delete g_;
		}
		g_ = nullptr;
	}

	struct pcpu_gauge_double *g_;
};

/* ---- histograms ---- */

/** A histogram's buckets and sum at one moment (pcpu_histogram_snapshot()). @since 0.5 */
struct histogram_snapshot {
	std::vector<int64_t> bounds;   /**< upper bounds, unscaled, without +Inf */
	std::vector<uint64_t> counts;  /**< bounds.size() + 1, non-cumulative, last +Inf */
	int64_t sum = 0;               /**< sum of observations, unscaled */

	/** The number of observations. */
	uint64_t count() const noexcept
	{
		uint64_t n = 0;

		for (uint64_t c : counts)
			n += c;
		return n;
	}
};

/** A histogram owned elsewhere (a histogram family's child, a percpu::histogram). @since 0.5 */
class histogram_ref {
public:
	/** Refers to @p h (NULL: an empty ref). */
	explicit histogram_ref(struct pcpu_histogram *h = nullptr) noexcept : h_(h) {}

	/** Records @p v: the inline per-CPU pcpu_histogram_observe(). */
	PCPU_ALWAYS_INLINE void observe(int64_t v) const noexcept { pcpu_histogram_observe(h_, v); }
	/**
	 * Records @p v with the exemplar @p l, as
	 * pcpu_histogram_observe_exemplar() (a slow path; @p v counts even when
	 * it throws).
	 */
	void observe_exemplar(int64_t v, percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		detail::check(pcpu_histogram_observe_exemplar(h_, v, c.get()),
			      "pcpu_histogram_observe_exemplar");
	}
	/** Every bucket and the sum, exact at quiescence. */
	histogram_snapshot snapshot() const
	{
		histogram_snapshot s;
		uint32_t n = pcpu_histogram_nr_buckets(h_);
		const int64_t *b = pcpu_histogram_bounds(h_);

		if (n == 0 || b == nullptr)
			detail::fail(EINVAL, "pcpu_histogram_snapshot");
		s.bounds.assign(b, b + (n - 1));
		s.counts.resize(n);
		detail::check(pcpu_histogram_snapshot(h_, s.counts.data(), &s.sum),
			      "pcpu_histogram_snapshot");
		return s;
	}
	/** The C histogram. */
	struct pcpu_histogram *get() const noexcept { return h_; }
	/** Whether it refers to a histogram. */
	explicit operator bool() const noexcept { return h_ != nullptr; }

protected:
	struct pcpu_histogram *h_;
};

/**
 * A histogram registered as a metric (pcpu_histogram_create()), destroyed
 * with it. Bounds and observations are int64 (nanoseconds, bytes); a scale
 * in the desc exposes them divided (desc::scale(1000000000): seconds).
 * @since 0.5
 */
class histogram : public histogram_ref {
public:
	/**
	 * Creates the histogram @p d with the strictly ascending upper bounds
	 * @p bounds, and native buckets too where @p native is not NULL.
	 * Throws EINVAL, ERANGE, EEXIST or ENOMEM as pcpu_histogram_create().
	 */
	histogram(const desc &d, const std::vector<int64_t> &bounds,
		  const struct pcpu_histogram_native *native = nullptr)
	{
		desc::c_labels l(d);
		struct pcpu_histogram_desc hd = {};

		hd.name = detail::c_str_or_null(d.name());
		hd.help = detail::c_str_or_null(d.help());
		hd.unit = detail::c_str_or_null(d.unit());
		hd.labels = l.get();
		hd.bounds = bounds.data();
		hd.nr_bounds = static_cast<uint32_t>(bounds.size());
		if (hd.nr_bounds != bounds.size() || (d.kind() && d.kind() != PCPU_METRIC_HISTOGRAM))
			detail::fail(EINVAL, "pcpu_histogram_create");
		hd.scale = d.scale();
		hd.native = native;
		hd.registry = d.c_registry();
		h_ = detail::check_ptr(pcpu_histogram_create(&hd), "pcpu_histogram_create");
	}

	histogram(histogram &&o) noexcept : histogram_ref(std::exchange(o.h_, nullptr)) {}
	histogram &operator=(histogram &&o) noexcept
	{
		if (this != &o) {
			pcpu_histogram_destroy(h_);
			h_ = std::exchange(o.h_, nullptr);
		}
		return *this;
	}
	histogram(const histogram &) = delete;
	histogram &operator=(const histogram &) = delete;

	/** Unregisters and frees it (pcpu_histogram_destroy()). */
	~histogram() { pcpu_histogram_destroy(h_); }
};

/* ---- summaries ---- */

/**
 * A summary's sketch (struct pcpu_summary_desc's fields of the same names,
 * <percpu/summary.h>): its quantiles (objectives), window and accuracy.
 * prometheus-cpp's Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}} gives an
 * error per quantile; here one relative error @c alpha holds for all.
 * @code
 * percpu::summary_options({ 0.5, 0.9, 0.99 }).max_age(std::chrono::seconds(60)).age_buckets(5)
 * @endcode
 * @since 0.5
 */
class summary_options {
public:
	/** The quantiles, strictly ascending, each in (0, 1); none: only _sum and _count. */
	summary_options(std::initializer_list<double> quantiles = {}) : quantiles_(quantiles) {}

	/** The window (max_age_ns); 0, the default: 10 minutes. */
	summary_options &max_age(std::chrono::nanoseconds a)
	{
		/* a negative age is no window the C call takes: EINVAL, not FOREVER */
		max_age_ = a.count() < 0 ? INT64_MIN : static_cast<int64_t>(a.count());
		return *this;
	}
	/** No window: quantiles of every observation (PCPU_SUMMARY_FOREVER). */
	summary_options &forever()
	{
		max_age_ = PCPU_SUMMARY_FOREVER;
		return *this;
	}
	/** Age buckets of the window; 0, the default: 5. */
	summary_options &age_buckets(uint32_t n)
	{
		age_buckets_ = n;
		return *this;
	}
	/** The relative accuracy; 0, the default: the finest that fits (min, max]. */
	summary_options &alpha(double a)
	{
		alpha_ = a;
		return *this;
	}
	/** Observations <= @p v (unscaled) are told apart no further. */
	summary_options &min(int64_t v)
	{
		min_ = v;
		return *this;
	}
	/** The largest observation (unscaled) with the guarantee; 0: INT64_MAX. */
	summary_options &max(int64_t v)
	{
		max_ = v;
		return *this;
	}

	/** @internal The C descriptor's sketch (pointing into this object). */
	struct pcpu_summary_desc c_desc() const
	{
		struct pcpu_summary_desc sd = {};

		sd.quantiles = quantiles_.empty() ? nullptr : quantiles_.data();
		sd.nr_quantiles = static_cast<uint32_t>(quantiles_.size());
		if (sd.nr_quantiles != quantiles_.size())
			detail::fail(EINVAL, "pcpu_summary_create");
		sd.age_buckets = age_buckets_;
		sd.alpha = alpha_;
		sd.min = min_;
		sd.max = max_;
		sd.max_age_ns = max_age_;
		return sd;
	}

private:
	std::vector<double> quantiles_;
	int64_t max_age_ = 0;
	uint32_t age_buckets_ = 0;
	double alpha_ = 0;
	int64_t min_ = 0, max_ = 0;
};

/** A summary owned elsewhere (a summary family's child, a percpu::summary). @since 0.5 */
class summary_ref {
public:
	/** Refers to @p s (NULL: an empty ref). */
	explicit summary_ref(struct pcpu_summary *s = nullptr) noexcept : s_(s) {}

	/**
	 * Records @p v, unscaled (pcpu_summary_observe(): per-CPU, no lock);
	 * false, recording nothing, for a negative @p v.
	 */
	bool observe(int64_t v) const noexcept { return pcpu_summary_observe(s_, v) == 0; }
	/**
	 * Records @p v in exposed units (times the scale, rounded), as
	 * prometheus-cpp's Observe(double) (pcpu_summary_observe_double());
	 * false for a NaN, negative, infinite or too large @p v.
	 */
	bool observe_double(double v) const noexcept
	{
		return pcpu_summary_observe_double(s_, v) == 0;
	}
	/**
	 * Quantile @p q of the window, in exposed units, within the guarantee
	 * of <percpu/summary.h>; NaN for an empty window. Throws EINVAL (@p q
	 * outside [0, 1]) or ENOMEM (pcpu_summary_quantile()).
	 */
	double quantile(double q) const
	{
		double v = 0;

		detail::check(pcpu_summary_quantile(s_, q, &v), "pcpu_summary_quantile");
		return v;
	}
	/** Observations since creation (pcpu_summary_count()); throws ENOMEM. */
	uint64_t count() const
	{
		uint64_t n = 0;

		detail::check(pcpu_summary_count(s_, &n, nullptr), "pcpu_summary_count");
		return n;
	}
	/** Their sum, unscaled (pcpu_summary_count()); throws ENOMEM. */
	int64_t sum() const
	{
		int64_t v = 0;

		detail::check(pcpu_summary_count(s_, nullptr, &v), "pcpu_summary_count");
		return v;
	}
	/** The relative accuracy it guarantees (pcpu_summary_alpha()). */
	double alpha() const noexcept { return pcpu_summary_alpha(s_); }
	/** The C summary. */
	struct pcpu_summary *get() const noexcept { return s_; }
	/** Whether it refers to a summary. */
	explicit operator bool() const noexcept { return s_ != nullptr; }

protected:
	struct pcpu_summary *s_;
};

/**
 * A summary registered as a metric (pcpu_summary_create()), destroyed with
 * it, as prometheus-cpp's Summary: observations are int64 (nanoseconds,
 * bytes), a scale in the desc exposes them divided (desc::scale(1000000000):
 * seconds). @since 0.5
 */
class summary : public summary_ref {
public:
	/**
	 * Creates the summary @p d with the sketch @p o. Throws EINVAL,
	 * ERANGE, EEXIST or ENOMEM as pcpu_summary_create().
	 */
	explicit summary(const desc &d, const summary_options &o = {})
	{
		desc::c_labels l(d);
		struct pcpu_summary_desc sd = o.c_desc();

		sd.name = detail::c_str_or_null(d.name());
		sd.help = detail::c_str_or_null(d.help());
		sd.unit = detail::c_str_or_null(d.unit());
		sd.labels = l.get();
		sd.scale = d.scale();
		sd.registry = d.c_registry();
		if (d.kind() && d.kind() != PCPU_METRIC_SUMMARY)
			detail::fail(EINVAL, "pcpu_summary_create");
		s_ = detail::check_ptr(pcpu_summary_create(&sd), "pcpu_summary_create");
	}

	summary(summary &&o) noexcept : summary_ref(std::exchange(o.s_, nullptr)) {}
	summary &operator=(summary &&o) noexcept
	{
		if (this != &o) {
			pcpu_summary_destroy(s_);
			s_ = std::exchange(o.s_, nullptr);
		}
		return *this;
	}
	summary(const summary &) = delete;
	summary &operator=(const summary &) = delete;

	/** Unregisters and frees it (pcpu_summary_destroy()). */
	~summary() { pcpu_summary_destroy(s_); }
};

/* ---- label families ---- */

namespace detail {

/* The C getter through a curried view of the family whose child is @Ref. */
template <class Ref>
struct curried_getter;
template <>
struct curried_getter<counter_ref> {
	static struct pcpu_counter *get(struct pcpu_family_curried *cf, const char *const *v)
	{
		return pcpu_family_curried_get(cf, v);
	}
	static constexpr const char *what = "pcpu_family_curried_get";
};
template <>
struct curried_getter<gauge_ref> {
	static struct pcpu_gauge *get(struct pcpu_family_curried *cf, const char *const *v)
	{
		return pcpu_family_curried_get_gauge(cf, v);
	}
	static constexpr const char *what = "pcpu_family_curried_get_gauge";
};
template <>
struct curried_getter<histogram_ref> {
	static struct pcpu_histogram *get(struct pcpu_family_curried *cf, const char *const *v)
	{
		return pcpu_family_curried_get_histogram(cf, v);
	}
	static constexpr const char *what = "pcpu_family_curried_get_histogram";
};
template <>
struct curried_getter<summary_ref> {
	static struct pcpu_summary *get(struct pcpu_family_curried *cf, const char *const *v)
	{
		return pcpu_family_curried_get_summary(cf, v);
	}
	static constexpr const char *what = "pcpu_family_curried_get_summary";
};

} // namespace detail

/**
 * A family with the values of some of its labels fixed
 * (pcpu_family_curry()), as client_golang's CurryWith; made by a family's
 * curry(). Its get() takes the values of the other labels, in the family's
 * order, and returns the very child (the same Ref, for the same C child)
 * that the family's get() of the whole tuple returns, with the same
 * overflow, refusals and cap. Move-only; it holds copies of its values and
 * a pointer to the C family, which a move of the family keeps: destroy it
 * before the family (declare it after), as the C view is freed before its
 * family. Removing children does not touch it. Any number of threads may
 * get through it at once. @p Ref is counter_ref, gauge_ref, histogram_ref
 * or summary_ref, as the family's get() returns. @since 0.5
 */
template <class Ref>
class curried {
public:
	/** Owns the C view @p cf (from pcpu_family_curry()), freed by the destructor. */
	explicit curried(struct pcpu_family_curried *cf) noexcept : cf_(cf) {}

	curried(curried &&o) noexcept : cf_(std::exchange(o.cf_, nullptr)) {}
	curried &operator=(curried &&o) noexcept
	{
		if (this != &o) {
			pcpu_family_curried_free(cf_);
			cf_ = std::exchange(o.cf_, nullptr);
		}
		return *this;
	}
	curried(const curried &) = delete;
	curried &operator=(const curried &) = delete;

	/** Frees the view (pcpu_family_curried_free()), not its family nor any child. */
	~curried() { pcpu_family_curried_free(cf_); }

	/**
	 * The child of the fixed values and @p values (one per label the view
	 * leaves free, in the family's order; {} where it fixes them all).
	 * Throws as the family's get() (EINVAL for a wrong number of values).
	 */
	Ref get(std::initializer_list<std::string_view> values) const
	{
		return get(values.begin(), values.size());
	}

	/** As get() above, with @p n values at @p values. */
	Ref get(const std::string_view *values, std::size_t n) const
	{
		detail::cstrings c(values, n, true);

		return Ref(detail::check_ptr(detail::curried_getter<Ref>::get(cf_, c.get()),
					     detail::curried_getter<Ref>::what));
	}

	/** The C view. */
	struct pcpu_family_curried *get() const noexcept { return cf_; }

private:
	struct pcpu_family_curried *cf_;
};

namespace detail {

/*
 * What the three families share: the C family, its destruction, and the
 * calls that do not depend on the kind of child.
 */
class family_base {
public:
	family_base(family_base &&o) noexcept : f_(std::exchange(o.f_, nullptr)) {}
	family_base &operator=(family_base &&o) noexcept
	{
		if (this != &o) {
			pcpu_family_destroy(f_);
			f_ = std::exchange(o.f_, nullptr);
		}
		return *this;
	}
	family_base(const family_base &) = delete;
	family_base &operator=(const family_base &) = delete;

	/* Destroys the family and every child (pcpu_family_destroy()). */
	~family_base() { pcpu_family_destroy(f_); }

	/*
	 * Removes the child of @p values (pcpu_family_remove()); false if the
	 * family has none. Throws EINVAL (a bad tuple) or EBUSY (the overflow child).
	 */
	bool remove(std::initializer_list<std::string_view> values)
	{
		detail::cstrings c(values.begin(), values.size(), true);
		int ret = pcpu_family_remove(f_, c.get());

		if (ret == -ENOENT)
			return false;
		detail::check(ret, "pcpu_family_remove");
		return true;
	}

	/*
	 * Removes every child whose labels hold all of @p l ({{"name",
	 * "value"}, ...}; {}: every child) but the overflow child, as
	 * pcpu_family_remove_matching(), client_golang's DeletePartialMatch;
	 * returns how many. Throws EINVAL (a name not among the family's
	 * label names or repeated, a bad value, a NUL byte).
	 */
	unsigned int remove_matching(percpu::labels l)
	{
		detail::cstrings c(l.begin(), l.size());
		int ret = pcpu_family_remove_matching(f_, c.get());

		detail::check(ret, "pcpu_family_remove_matching");
		return static_cast<unsigned int>(ret);
	}

	/* Frees removed children (pcpu_family_reclaim()). */
	void reclaim() noexcept { pcpu_family_reclaim(f_); }

	/* Gives the family an overflow child (pcpu_family_set_overflow()). */
	void set_overflow(std::initializer_list<std::string_view> values)
	{
		detail::cstrings c(values.begin(), values.size(), true);

		detail::check(pcpu_family_set_overflow(f_, c.get()), "pcpu_family_set_overflow");
	}

	/* Gets refused so far (pcpu_family_refused()). */
	uint64_t refused() const noexcept { return pcpu_family_refused(f_); }
	/* Live children (pcpu_family_count()). */
	unsigned int size() const noexcept { return pcpu_family_count(f_); }
	/* The C family. */
	struct pcpu_family *get() const noexcept { return f_; }

protected:
	family_base(const desc &d, std::initializer_list<std::string_view> label_names,
		    enum pcpu_metric_kind kind, uint32_t flags, uint32_t max_children,
		    const struct pcpu_counter_options *opts, const std::vector<int64_t> *bounds,
		    const struct pcpu_histogram_native *native,
		    const summary_options *sketch = nullptr)
	{
		detail::cstrings names(label_names.begin(), label_names.size());
		desc::c_labels l(d);
		struct pcpu_family_desc fd = {};

		fd.name = detail::c_str_or_null(d.name());
		fd.help = detail::c_str_or_null(d.help());
		fd.unit = detail::c_str_or_null(d.unit());
		fd.kind = kind;
		fd.label_names = names.get();
		fd.max_children = max_children;
		fd.opts = opts;
		if (bounds != nullptr) {
			fd.bounds = bounds->data();
			fd.nr_bounds = static_cast<uint32_t>(bounds->size());
			if (fd.nr_bounds != bounds->size())
				detail::fail(EINVAL, "pcpu_family_create");
		}
		fd.scale = d.scale();
		fd.const_labels = l.get();
		fd.flags = flags;
		fd.native = native;
		fd.registry = d.c_registry();
		if (sketch != nullptr) {
			struct pcpu_summary_desc sd = sketch->c_desc();

			f_ = detail::check_ptr(pcpu_family_create_summary(&fd, &sd),
					       "pcpu_family_create_summary");
			return;
		}
		f_ = detail::check_ptr(pcpu_family_create(&fd), "pcpu_family_create");
	}

	/* The child of @p values through the C getter @p fn: throws where it gives NULL. */
	template <class Child>
	Child *child(Child *(*fn)(struct pcpu_family *, const char *const *),
		     const std::string_view *values, std::size_t n, const char *what) const
	{
		detail::cstrings c(values, n, true);

		return detail::check_ptr(fn(f_, c.get()), what);
	}

	struct pcpu_family *f_;
};

} // namespace detail

/**
 * A counter family (pcpu_family_create(), kind counter, or gauge with
 * desc::kind(PCPU_METRIC_GAUGE)): one per-CPU counter per tuple of label
 * values, as prometheus-cpp's Family<Counter>. get() looks the child up
 * without a lock (only a new tuple takes the family's lock); keep the
 * counter_ref it returns to add without any lookup, as prometheus-cpp's
 * Counter&. Every family also has remove({values}) (pcpu_family_remove()),
 * remove_matching({{"name", "value"}, ...}) (pcpu_family_remove_matching(),
 * client_golang's DeletePartialMatch: the number removed), reclaim(),
 * set_overflow({values}), refused() and size(). @since 0.5
 */
class counter_family : public detail::family_base {
public:
	using family_base::get; /**< the C family */

	/**
	 * Creates the family @p d with the label names @p label_names (1 to
	 * PCPU_FAMILY_MAX_LABELS), at most @p max_children children (0: the
	 * default, PCPU_FAMILY_DEFAULT_MAX_CHILDREN), counters of options
	 * @p opts. Throws as pcpu_family_create() fails.
	 */
	counter_family(const desc &d, std::initializer_list<std::string_view> label_names,
		       uint32_t max_children = 0, const struct pcpu_counter_options *opts = nullptr)
		: family_base(d, label_names,
			      d.kind() ? static_cast<enum pcpu_metric_kind>(d.kind()) : PCPU_METRIC_COUNTER, 0,
			      max_children, opts, nullptr, nullptr)
	{
	}

	/**
	 * The child of @p values (one per label name, in their order), created
	 * at 0 on first use. Throws EINVAL (a wrong number of values, one not
	 * UTF-8, too long or holding a NUL byte), E2BIG (a new tuple at
	 * max_children) or ENOMEM, unless the family has an overflow child,
	 * which it returns instead (pcpu_family_get()).
	 */
	counter_ref get(std::initializer_list<std::string_view> values) const
	{
		return get(values.begin(), values.size());
	}

	/** As get() above, with @p n values at @p values. */
	counter_ref get(const std::string_view *values, std::size_t n) const
	{
		return counter_ref(child(pcpu_family_get, values, n, "pcpu_family_get"));
	}

	/**
	 * A view with the labels of @p l ({{"name", "value"}, ...}, names among
	 * the family's label names, in any order) fixed (pcpu_family_curry()),
	 * as client_golang's CurryWith: its get() takes the values of the
	 * other labels. Destroy it before the family. Throws EINVAL (a name
	 * not among the label names or repeated, a value not UTF-8, too long
	 * or holding a NUL byte) or ENOMEM.
	 */
	curried<counter_ref> curry(percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		return curried<counter_ref>(detail::check_ptr(pcpu_family_curry(f_, c.get()),
							   "pcpu_family_curry"));
	}
};

/**
 * A family of set-style gauges (PCPU_FAMILY_F_SET_GAUGE), as
 * prometheus-cpp's Family<Gauge>; get() as counter_family's. @since 0.5
 */
class gauge_family : public detail::family_base {
public:
	using family_base::get; /**< the C family */

	/** Creates the family @p d; as counter_family's. */
	gauge_family(const desc &d, std::initializer_list<std::string_view> label_names,
		     uint32_t max_children = 0)
		: family_base(d, label_names, PCPU_METRIC_GAUGE, PCPU_FAMILY_F_SET_GAUGE,
			      max_children, nullptr, nullptr, nullptr)
	{
	}

	/** The child of @p values (pcpu_family_get_gauge()); as counter_family::get(). */
	gauge_ref get(std::initializer_list<std::string_view> values) const
	{
		return get(values.begin(), values.size());
	}

	/** As get() above, with @p n values at @p values. */
	gauge_ref get(const std::string_view *values, std::size_t n) const
	{
		return gauge_ref(child(pcpu_family_get_gauge, values, n, "pcpu_family_get_gauge"));
	}

	/** A view with the labels of @p l fixed; as counter_family::curry(). */
	curried<gauge_ref> curry(percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		return curried<gauge_ref>(detail::check_ptr(pcpu_family_curry(f_, c.get()),
							   "pcpu_family_curry"));
	}
};

/**
 * A family of histograms, each with the bounds @p bounds (and native
 * buckets where @p native is not NULL), as prometheus-cpp's
 * Family<Histogram> (whose buckets are given per child). @since 0.5
 */
class histogram_family : public detail::family_base {
public:
	using family_base::get; /**< the C family */

	/** Creates the family @p d; as counter_family's, with the histograms' bounds. */
	histogram_family(const desc &d, std::initializer_list<std::string_view> label_names,
			 const std::vector<int64_t> &bounds,
			 const struct pcpu_histogram_native *native = nullptr,
			 uint32_t max_children = 0)
		: family_base(d, label_names, PCPU_METRIC_HISTOGRAM, 0, max_children, nullptr,
			      &bounds, native)
	{
	}

	/** The child of @p values (pcpu_family_get_histogram()); as counter_family::get(). */
	histogram_ref get(std::initializer_list<std::string_view> values) const
	{
		return get(values.begin(), values.size());
	}

	/** As get() above, with @p n values at @p values. */
	histogram_ref get(const std::string_view *values, std::size_t n) const
	{
		return histogram_ref(
			child(pcpu_family_get_histogram, values, n, "pcpu_family_get_histogram"));
	}

	/** A view with the labels of @p l fixed; as counter_family::curry(). */
	curried<histogram_ref> curry(percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		return curried<histogram_ref>(detail::check_ptr(pcpu_family_curry(f_, c.get()),
							   "pcpu_family_curry"));
	}
};

/**
 * A family of summaries, each of the sketch @p o
 * (pcpu_family_create_summary()), as prometheus-cpp's Family<Summary>
 * (whose quantiles are given per child); get() as counter_family's. Each
 * child's window starts at its creation. @since 0.5
 */
class summary_family : public detail::family_base {
public:
	using family_base::get; /**< the C family */

	/** Creates the family @p d; as counter_family's, with the children's sketch. */
	summary_family(const desc &d, std::initializer_list<std::string_view> label_names,
		       const summary_options &o = {}, uint32_t max_children = 0)
		: family_base(d, label_names, PCPU_METRIC_SUMMARY, 0, max_children, nullptr, nullptr,
			      nullptr, &o)
	{
	}

	/** The child of @p values (pcpu_family_get_summary()); as counter_family::get(). */
	summary_ref get(std::initializer_list<std::string_view> values) const
	{
		return get(values.begin(), values.size());
	}

	/** As get() above, with @p n values at @p values. */
	summary_ref get(const std::string_view *values, std::size_t n) const
	{
		return summary_ref(child(pcpu_family_get_summary, values, n, "pcpu_family_get_summary"));
	}

	/** A view with the labels of @p l fixed; as counter_family::curry(). */
	curried<summary_ref> curry(percpu::labels l) const
	{
		detail::cstrings c(l.begin(), l.size());

		return curried<summary_ref>(detail::check_ptr(pcpu_family_curry(f_, c.get()),
							   "pcpu_family_curry"));
	}
};

/* ---- the /metrics server ---- */

/**
 * The built-in /metrics server (pcpu_metrics_serve_opts(); needs the
 * library built with libmicrohttpd, else ENOTSUP), as prometheus-cpp's
 * Exposer, stopped with it. @since 0.5
 */
class server {
public:
	/**
	 * Serves registry @p r (NULL: the process's) at /metrics on TCP
	 * @p port (0: a free one, see port()) of the numeric address
	 * @p address (empty: every address). Throws as pcpu_metrics_serve_opts().
	 */
	explicit server(std::string_view address, unsigned int port, const registry *r = nullptr)
	{
		std::string addr(address);
		struct pcpu_metrics_server_options o = {};

		if (detail::has_nul(address))
			detail::fail(EINVAL, "pcpu_metrics_serve_opts");
		o.size = sizeof(o);
		o.address = addr.empty() ? nullptr : addr.c_str();
		o.port = port;
		o.registry = r != nullptr ? r->get() : nullptr;
		s_ = detail::check_ptr(pcpu_metrics_serve_opts(&o), "pcpu_metrics_serve_opts");
	}

	/** Serves with every option of @p o (TLS, basic auth, path). */
	explicit server(const struct pcpu_metrics_server_options &o)
		: s_(detail::check_ptr(pcpu_metrics_serve_opts(&o), "pcpu_metrics_serve_opts"))
	{
	}

	server(server &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
	server &operator=(server &&o) noexcept
	{
		if (this != &o) {
			pcpu_metrics_server_stop(s_);
			s_ = std::exchange(o.s_, nullptr);
		}
		return *this;
	}
	server(const server &) = delete;
	server &operator=(const server &) = delete;

	/** Stops it (pcpu_metrics_server_stop()): the port is free again. */
	~server() { pcpu_metrics_server_stop(s_); }

	/** The TCP port it listens on. */
	unsigned int port() const noexcept { return pcpu_metrics_server_port(s_); }

private:
	struct pcpu_metrics_server *s_;
};

/* ---- push ---- */

/**
 * A Prometheus Pushgateway's group (pcpu_metrics_push()), as
 * prometheus-cpp's Gateway: push() (PUT: the registry's metrics replace
 * the group's), push_add() (POST: those of the same names only) and
 * remove() (DELETE: the group). Each call blocks until the gateway answers
 * and throws std::system_error with pcpu_metrics_push()'s errno (EBADMSG
 * for metrics the gateway refuses, ECONNREFUSED, ETIMEDOUT, ...), what()
 * holding the gateway's answer ("HTTP 400: ...") where there is one. As in
 * C, the call exists whether or not the library was built with libcurl;
 * without it, every push throws ENOTSUP. Holds copies of its strings.
 * @since 0.5
 */
class gateway {
public:
	/**
	 * The group @p job and @p grouping ({{"instance", "a"}}) of the
	 * gateway at @p url ("http://127.0.0.1:9091"), pushing registry @p r
	 * (NULL: the process's metrics). Throws EINVAL for a NUL byte in a
	 * string; the rest is checked at each push, as the C call checks it.
	 */
	gateway(std::string_view url, std::string_view job, percpu::labels grouping = {},
		const registry *r = nullptr)
		: url_(url), job_(job), registry_(r != nullptr ? r->get() : nullptr)
	{
		if (detail::has_nul(url) || detail::has_nul(job))
			detail::fail(EINVAL, "pcpu_metrics_push");
		for (const label &kv : grouping) {
			if (detail::has_nul(kv.first) || detail::has_nul(kv.second))
				detail::fail(EINVAL, "pcpu_metrics_push");
			grouping_.emplace_back(kv.first);
			grouping_.emplace_back(kv.second);
		}
	}

	/** HTTP basic authentication on every push. */
	gateway &basic_auth(std::string_view user, std::string_view password)
	{
		if (detail::has_nul(user) || detail::has_nul(password))
			detail::fail(EINVAL, "pcpu_metrics_push");
		user_ = user;
		password_ = password;
		auth_ = true;
		return *this;
	}
	/** The body's format: PCPU_METRICS_PROMETHEUS (the default) or PCPU_METRICS_PROTOBUF. */
	gateway &format(enum pcpu_metrics_format f)
	{
		format_ = f;
		return *this;
	}
	/** The limit of each request; 0, the default: 10 s. */
	gateway &timeout(std::chrono::milliseconds t)
	{
		timeout_ms_ = t.count() <= 0 ? 0u
			      : t.count() > 0xffffffffLL ? 0xffffffffu
							 : static_cast<unsigned int>(t.count());
		return *this;
	}

	/** PUT, as prometheus-cpp's Push(). */
	void push() const { send(PCPU_METRICS_PUSH_PUT); }
	/** POST, as prometheus-cpp's PushAdd(). */
	void push_add() const { send(PCPU_METRICS_PUSH_POST); }
	/** DELETE, as prometheus-cpp's Delete(). */
	void remove() const { send(PCPU_METRICS_PUSH_DELETE); }

private:
	void send(enum pcpu_metrics_push_method m) const
	{
		std::vector<const char *> grouping;
		struct pcpu_metrics_push_options o = {};
		char message[512] = "";

		for (const std::string &s : grouping_)
			grouping.push_back(s.c_str());
		grouping.push_back(nullptr);
		o.size = sizeof(o);
		o.url = url_.c_str();
		o.job = job_.c_str();
		o.grouping = grouping.size() > 1 ? grouping.data() : nullptr;
		o.format = format_;
		o.basic_auth_user = auth_ ? user_.c_str() : nullptr;
		o.basic_auth_password = auth_ ? password_.c_str() : nullptr;
		o.timeout_ms = timeout_ms_;
		o.registry = registry_;
		int ret = pcpu_metrics_push(&o, m, message, sizeof(message));
		if (ret < 0)
			detail::fail(-ret, (std::string("pcpu_metrics_push") +
					    (message[0] ? std::string(": ") + message : std::string()))
						   .c_str());
	}

	std::string url_, job_, user_, password_;
	std::vector<std::string> grouping_;
	struct pcpu_metrics_registry *registry_;
	enum pcpu_metrics_format format_ = PCPU_METRICS_PROMETHEUS;
	unsigned int timeout_ms_ = 0;
	bool auth_ = false;
};

} // namespace percpu

#endif /* PERCPU_METRICS_HPP */
