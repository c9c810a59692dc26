// Registry of the functions each kernels/*_binding.cpp contributes to the one extension module.
// Same interface as CUDA Agent's fixed binding_registry.h: REGISTER_BINDING(name, fn) and
// BindingRegistry::getInstance().applyBindings(m).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

class BindingRegistry {
public:
    using Binder = std::function<void(pybind11::module&)>;

    static BindingRegistry& getInstance() {
        static BindingRegistry registry;
        return registry;
    }

    void registerBinding(std::string name, Binder binder) {
        entries_.emplace_back(std::move(name), std::move(binder));
    }

    void applyBindings(pybind11::module& m) const {
        for (const auto& entry : entries_) entry.second(m);
    }

private:
    BindingRegistry() = default;
    std::vector<std::pair<std::string, Binder>> entries_;
};

struct BindingRegistration {
    BindingRegistration(const char* name, BindingRegistry::Binder binder) {
        BindingRegistry::getInstance().registerBinding(name, std::move(binder));
    }
};

// One static object per binding file: it adds the file's functions before the module initialises.
#define REGISTER_BINDING(name, fn) \
    static BindingRegistration kh_binding_registration_##name(#name, [](pybind11::module& m) { fn(m); })
